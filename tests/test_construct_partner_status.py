"""Partner status (construct/partner_status.py) and the trace link it makes (construct/turn_changes.py): a
person's status told again in a later session with another value, or another named partner, is a change
of their relationship state even when the two turns share no word; the same status told again, a third
person's status, a question and a negated status are not.

The sentences are written for this test, in the register of chat; none comes from a benchmark or a fixture.
"""

from __future__ import annotations

import pytest

from qgmem.construct.partner_status import ENGAGED, MARRIED, SEEING, SINGLE, Status, partner_status, statuses_of_others
from test_construct_turn_changes import _changed, _chat


@pytest.mark.parametrize(("text", "value", "partner"), [
    ("Honestly? I'm single and loving the quiet.", SINGLE, None),
    ("I haven't been dating anyone since the spring.", SINGLE, None),
    ("Tobiah and I broke up in the autumn, no hard feelings.", SINGLE, "Tobiah"),
    ("Good news, I've been seeing someone since the fair.", SEEING, None),
    ("Yes, I'm dating Lisandro now, he fixes clocks.", SEEING, "Lisandro"),
    ("Marisa and I have been together since the summer.", SEEING, "Marisa"),
    ("Guess what, we're engaged! He asked on the ferry.", ENGAGED, None),
    ("We're getting married in the spring!", MARRIED, None),
    ("A little bird says you're going out with the baker's son now.", None, None),  # no person named: not read
    ("So you're seeing someone now! Who is it?", SEEING, None),  # about the one spoken to
    ("I'm going out with a plasterer called Eamon these days.", SEEING, "Eamon"),  # a job and a name
    ("Fresh start: I've been seeing a potter named Ines since Easter.", SEEING, "Ines"),
    ("We've been dating since the Christmas party.", SEEING, None),
    ("So you and Anouk are engaged! Wonderful.", ENGAGED, None),  # "you and X": the one spoken to
    ("We're still rubbing along, married nineteen years in June.", MARRIED, None),
    ("Oskari and I have parted; the dogs stayed with me.", SINGLE, "Oskari"),
    ("Tarmo and I ended it in February.", SINGLE, "Tarmo"),
    ("Tarmo and I were married at the town hall in July.", MARRIED, "Tarmo"),
    ("I returned the ring in October; we both knew.", SINGLE, None),
    ("Brannoc and I have been a couple since the harvest dance.", SEEING, "Brannoc"),
    ("We tied the knot in May, on the old pier!", MARRIED, None),
    ("My husband Orrin grumbled at the rain all day.", MARRIED, "Orrin"),
    ("Orrin and I went our own ways in March.", SINGLE, "Orrin"),
    ("I've been seeing a cellist from the conservatoire since spring.", SEEING, None),
    ("We've been a pair since the midsummer fair.", SEEING, None),
    ("And then in August we split, no drama.", SINGLE, None),
    ("Brannoc and I married in the spring, at last.", MARRIED, "Brannoc"),
    ("We've been going steady since the winter fair.", SEEING, None),
    ("Ilka and I celebrate two years as a couple this month.", SEEING, "Ilka"),
    ("Ilka and I got together at the harvest, and it's serious.", SEEING, "Ilka"),
    ("Ilka and I called time on it in May.", SINGLE, "Ilka"),
    ("My cousin says you and Ilka called it off in August.", SINGLE, None),
    ("I broke off the engagement in July.", SINGLE, None),
    ("I've news of my own: Ilka and I finished in September.", SINGLE, "Ilka"),
    # a partner introduced or lasting, courting told old-style, a proposal, a partner who is history
    ("I'm going out with Tavish, the boat builder, since the regatta.", SEEING, "Tavish"),
    ("I'm seeing Oriel now, a potter from the valley.", SEEING, "Oriel"),
    ("Yes, we've walked out together since the spring fair.", SEEING, None),
    ("I hear you've got a new man, a roofer.", SEEING, None),
    ("I asked her to marry me on the pier in July, and she said yes.", ENGAGED, None),
    ("Guess what: Tavish and I had our wedding in July, in his village.", MARRIED, "Tavish"),
    ("Edidiong and I have gone our different ways; she returned my ring.", SINGLE, "Edidiong"),
    ("And guess what: I have a fiancé.", ENGAGED, None),
    ("My sister heard that you and Halima aren't getting married after all.", SINGLE, None),
    ("I'm going out with Oriel tonight.", None, None), ("I'm seeing Oriel on Friday.", None, None),  # outings
])
def test_a_status_is_read_with_its_value_and_named_partner(text: str, value: str | None, partner: str | None) -> None:
    got = partner_status(text)
    assert (got.value, got.partner) == (value, partner) if value else got is None


@pytest.mark.parametrize("text", [
    "My sister and her husband split up last year.",  # a third person's status
    "I think she's seeing someone from work.",
    "Are you still seeing him?",  # a question tells nothing
    "We're not engaged, whatever people say.",  # negated
    "I didn't get married young, I waited.",
    "I'm seeing the dentist on Friday.",  # "seeing" without a partner
    "I'm going out tonight with the team.",
    "I met someone from the old school at the market.",
    "I proposed a new rota at work and nobody argued.",  # a proposal that is no engagement
    "We'd like to get married one day, maybe.",  # a wish, not a status
    "My cousin and Teodor are engaged, apparently.",  # a third person's status
    "They want to be married within two years.",
    "My wife's brother fixed the gate.",  # the wife's brother: no status told
    "We split the bill, as always.",  # a bill, not a couple
    "We called it off because of the rain.", "We all got together at the pub.",  # an outing
    "The family got together for Christmas.", "Tom and I finished the fence.", "We finished in May.",
    "I'm seeing a physio from the clinic on Tuesday.",  # an appointment
])
def test_no_status_is_read_where_none_of_the_speaker_is_told(text: str) -> None:
    assert partner_status(text) is None


def test_another_value_or_partner_differs_and_the_same_one_told_again_does_not() -> None:
    assert Status(SEEING, None).differs(Status(SINGLE, None))
    assert Status(ENGAGED, "Ilse").differs(Status(SEEING, "Ilse"))
    assert Status(SEEING, "Rufus").differs(Status(SEEING, "Ilse"))
    assert not Status(SEEING, None).differs(Status(SEEING, "Ilse"))  # an unnamed partner may be the same one
    assert not Status(SINGLE, None).differs(Status(SINGLE, "Tobiah"))
    # a partner told after an ending in the same turn is a new one, named or not
    after = partner_status("Clareta and I finished in May. Since June I've been courting a schoolteacher.")
    assert after == Status(SEEING, None, after_end=True) and after.differs(Status(SEEING, None))
    assert partner_status("We've been courting since June.") == Status(SEEING, None)  # no ending before it


SINGLE_TURN = (1, 1, "Wenonah", "Wenonah", "be", "happy",
               "Not much news. I'm single, and honestly happy about it.")
SMALL_TALK = (2, 1, "Caspian", "Caspian", "like", "the new cafe", "I like the new cafe on the corner.")


def test_a_new_status_in_a_later_session_links_the_old_one_without_a_shared_word() -> None:
    units, texts = _chat(SINGLE_TURN, SMALL_TALK,
                         (3, 2, "Wenonah", "Wenonah", "meet", "a potter",
                          "Big news: I've met someone. A potter from up the valley. We've been together since May."))
    assert _changed(units, None) == []  # the triples alone share nothing
    assert _changed(units, texts) == [("n/u1", "n/u3")]


def test_the_same_status_told_again_or_in_the_same_session_links_nothing() -> None:
    units, texts = _chat(SINGLE_TURN, SMALL_TALK,
                         (3, 2, "Wenonah", "Wenonah", "be", "busy", "Still single, still busy with the garden."))
    assert _changed(units, texts) == []
    units, texts = _chat(SINGLE_TURN, (2, 1, "Wenonah", "Wenonah", "date", "a potter",
                                       "Well, actually I've been seeing someone for a week."))
    assert _changed(units, texts) == []  # the same session: a correction, not a change over time


def test_another_persons_status_does_not_change_the_speakers() -> None:
    units, texts = _chat(SINGLE_TURN, SMALL_TALK,
                         (3, 2, "Caspian", "Caspian", "marry", "Imelda",
                          "Imelda and I are getting married in June!"))
    assert _changed(units, texts) == []  # Caspian told no status before; Wenonah's stays as it was


def test_together_after_married_is_no_change_unless_with_another_named_partner() -> None:
    wed = Status(MARRIED, None)
    assert not Status(SEEING, None).differs(wed)  # "my husband" ... "we've been together ten years"
    assert Status(SEEING, "Ilar").differs(Status(MARRIED, "Orrin"))
    assert Status(SINGLE, None).differs(wed)


def test_a_third_person_who_married_again_is_married() -> None:
    ((who, _, status),) = statuses_of_others("My uncle married again in June, a baker from the coast.")
    assert "My uncle" in who and status.value == MARRIED
