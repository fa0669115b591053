"""One time resolver: a memory unit's fact time and a question's time constraint agree.

Each expression is said once in a dated session (the rule extractor resolves the unit's fact time
against the session date) and once in a question asked at that same moment (the rule query parser
resolves it against the question time); both must give the same interval.

"the week before" has no anchor in a single sentence (before *what*?), so it is vague and resolves to
None on both sides, like "a few weeks ago" and "recently".
"""

from __future__ import annotations

import pytest

from qgmem.construct.rule import RuleExtractor
from qgmem.construct.windows import Window
from qgmem.retrieve.query import parse_rule
from qgmem.timex import resolve_time
from qgmem.types import Turn

REF = "2023-05-08T13:56"  # a Monday

# expression, tense of the sentence, expected inclusive interval (None = unspecified)
TABLE = [
    ("yesterday", "past", ("2023-05-07", "2023-05-07")),
    ("the day before yesterday", "past", ("2023-05-06", "2023-05-06")),
    ("three days ago", "past", ("2023-05-05", "2023-05-05")),
    ("two weeks ago", "past", ("2023-04-24", "2023-04-24")),
    ("two months ago", "past", ("2023-03-01", "2023-03-31")),
    ("10 years ago", "past", ("2013-01-01", "2013-12-31")),
    ("last Friday", "past", ("2023-05-05", "2023-05-05")),
    ("last Sunday", "past", ("2023-05-07", "2023-05-07")),
    ("last week", "past", ("2023-05-01", "2023-05-07")),
    ("last weekend", "past", ("2023-05-06", "2023-05-07")),
    ("last month", "past", ("2023-04-01", "2023-04-30")),
    ("last year", "past", ("2022-01-01", "2022-12-31")),
    ("last May", "past", ("2022-05-01", "2022-05-31")),  # said in May: the May before this one
    ("last March", "past", ("2023-03-01", "2023-03-31")),  # the latest March, this year
    ("last October", "past", ("2022-10-01", "2022-10-31")),
    ("in August", "past", ("2022-08-01", "2022-08-31")),  # past tense, a later month: last year's
    ("in August", "future", ("2023-08-01", "2023-08-31")),
    ("in March", "past", ("2023-03-01", "2023-03-31")),
    ("next month", "future", ("2023-06-01", "2023-06-30")),
    ("next May", "future", ("2024-05-01", "2024-05-31")),
    ("next week", "future", ("2023-05-15", "2023-05-21")),
    ("next Friday", "future", ("2023-05-12", "2023-05-12")),
    ("tomorrow", "future", ("2023-05-09", "2023-05-09")),
    ("in two weeks", "future", ("2023-05-22", "2023-05-22")),
    ("on Aug 15th", "past", ("2022-08-15", "2022-08-15")),  # a past day after the reference: last year
    ("on 1 May, 2023", "past", ("2023-05-01", "2023-05-01")),
    ("on 8th December, 2022", "past", ("2022-12-08", "2022-12-08")),
    ("on December 1,2022", "past", ("2022-12-01", "2022-12-01")),
    ("in June 2022", "past", ("2022-06-01", "2022-06-30")),
    ("on the fourteenth of April", "past", ("2023-04-14", "2023-04-14")),  # a day in words
    ("on the twenty-first of June, 2021", "past", ("2021-06-21", "2021-06-21")),
    ("on October the second", "future", ("2023-10-02", "2023-10-02")),
    ("in 2021", "past", ("2021-01-01", "2021-12-31")),
    ("the week before", "past", None),
    ("the second week of November", "past", None),  # "of <Month>" is ambiguous: "as of November" = up to it
    ("a few weeks ago", "past", None),
    ("several years ago", "past", None),
    ("recently", "past", None),
]


def _fact_time(expr: str, tense: str) -> tuple[str, str] | None:
    text = f"I went to the lake with Bob {expr}." if tense == "past" else f"I will go to the lake with Bob {expr}."
    turn = Turn("D1:1", "Alice", text)
    window = Window("S1", 0, [turn], [], [turn], session_date=REF)
    (unit,) = RuleExtractor().extract(window, "conv", ["Alice", "Bob"])
    if unit.fact_time_start is None:
        return None
    return unit.fact_time_start, unit.fact_time_end


def _question_time(expr: str, tense: str) -> tuple[str, str] | None:
    q = f"Where did Alice go {expr}?" if tense == "past" else f"Where will Alice go {expr}?"
    c = parse_rule(q, REF)
    if c.time_start is None:
        return None
    return c.time_start, c.time_end


@pytest.mark.parametrize("expr,tense,expected", TABLE, ids=[f"{e}/{t}" for e, t, _ in TABLE])
def test_unit_and_question_resolve_to_the_same_interval(expr, tense, expected) -> None:
    assert _fact_time(expr, tense) == expected
    assert _question_time(expr, tense) == expected


def test_week_counted_expression_names_a_day_known_to_the_week() -> None:
    assert resolve_time("two weeks ago", REF).grain == "week"
    assert resolve_time("last week", REF).grain == "week"
    assert resolve_time("three days ago", REF).grain == "day"
    assert resolve_time("last month", REF).grain == "month"


def test_numbers_that_are_names_are_not_years() -> None:
    assert resolve_time('I keep playing "Cyberpunk 2077".', "2022-10-09") is None
    assert resolve_time("We moved here in 2019.", "2022-10-09").interval == ("2019-01-01", "2019-12-31")
    assert resolve_time("2077", None).interval == ("2077-01-01", "2077-12-31")  # no reference: nothing to judge by


def test_an_ordinal_word_names_a_day_only_beside_a_month() -> None:
    assert resolve_time("The Fourteenth of April was our day.", REF).interval == ("2023-04-14", "2023-04-14")
    assert resolve_time("It was my second May in Lisbon.", REF) is None
    assert resolve_time("you may second the motion", REF) is None  # "may" is a month only capitalised
    assert resolve_time("the second week of November", REF) is None
