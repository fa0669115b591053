"""The shift a speaker works (construct/work_shift.py): read from a sentence, and a new shift changes the old one
whatever words the two share."""

from __future__ import annotations

import pytest

from qgmem.construct.work_shift import Shift, work_shift
from tests.test_construct_turn_changes import SMALL_TALK, _changed, _chat


@pytest.mark.parametrize("text, held, left", [
    ("I'm still on nights at the sorting depot.", {"night"}, set()),
    ("I've been on days since the middle of January.", {"day"}, set()),
    ("They've put me on earlies. Six till two, from this month.", {"early"}, set()),
    ("I work nine to five, Monday to Friday, in an office.", {"nine to five"}, set()),
    ("I do nights on the maternity ward, Sunday to Wednesday.", {"night"}, set()),
    ("I work four night shifts a week in the pharmacy.", {"night"}, set()),
    ("The rota changed: three long days, and no nights at all.", set(), {"night"}),
    ("I'm on the two-till-ten at the call centre.", {"two to ten"}, set()),  # hours as one form
    ("I switched to the late crossings in June.", {"late"}, set()),
    ("Update: I'm off nights! I've been on the day shift since New Year.", {"day"}, {"night"}),
    ("Managers work days, so no more nights!", set(), {"night"}),
    ("We're on the day shift at the bakery now.", {"day"}, set()),
    ("I'm on the early shift this month.", {"early"}, set()),
    # a part of the day, and the hours of a habit
    ("I work the evening now, the bar is quieter.", {"evening"}, set()),
    ("Mornings now. The new girl took the evenings.", {"morning"}, set()),
    ("I sweep the market hall, Tuesday to Saturday from five till eight in the morning.", {"five to eight"}, set()),
    ("I bake from four until noon, then I sleep.", {"four to noon"}, set()),
    ("I work the chairlift at Szczawnica, the early shift, seven till three.", {"early"}, set()),
    ("Since March my turn starts at one and ends at nine.", {"one to nine"}, set()),
])
def test_a_shift_is_read_with_its_kind_or_hours(text: str, held: set[str], left: set[str]) -> None:
    assert work_shift(text) == Shift(frozenset(held), frozenset(left))


@pytest.mark.parametrize("text", ["I'm on holiday next week.", "Are you still on nights?", "He's on nights.",
                                  "I have no days off this month.",
                                  "I'm going to Paris on Tuesday.", "I went to the beach on days off.",
                                  "I drove from two to four without a break.", "We walked from nine till noon.",
                                  "I met her at the pub, the night shift crowd."])
def test_what_tells_no_shift(text: str) -> None:
    assert work_shift(text) is None


def test_a_new_shift_changes_the_old_one_without_a_shared_word() -> None:
    old = (1, 1, "Tamsin", "Tamsin", "be on", "nights", "Fourth night in a row. I'm on nights on the stroke ward.")
    new = (3, 2, "Tamsin", "Tamsin", "be", "human again", "Human again. I've been on days since the middle of January.")
    assert _changed(*_chat(old, SMALL_TALK, new)) == [("n/u1", "n/u3")]
    same = (3, 2, "Tamsin", "Tamsin", "be", "tired", "Tired. I'm still on nights, and the coffee machine broke.")
    assert _changed(*_chat(old, SMALL_TALK, same)) == []
    assert Shift(frozenset({"late"})).differs(Shift(frozenset({"early"})))
    assert not Shift(frozenset({"late", "two till ten"})).differs(Shift(frozenset({"two till ten"})))
