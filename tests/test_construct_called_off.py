"""A plan called off or put back (construct/called_off.py), and the change it tells through
construct/turn_changes.py: the sentence readings, and the links a turn makes when it names the plan between a
verb and its particle ("put Ravensby off"), or by a pronoun or nothing after a question that names it
("Still off to Kellaway in June?" -> "No, we've cancelled.").

Units are written by hand as the rule extractor makes them: for "No, we've cancelled." it keeps no claim.
"""

from __future__ import annotations

import pytest

from qgmem.construct.called_off import called_off
from qgmem.construct.ending_reader import Ending
from tests.test_construct_turn_changes import _changed, _chat


@pytest.mark.parametrize("sentence, expected", [
    # a verb and its particle around the plan, a time after it
    ("They've put Ravensby off until next May.", Ending("Ravensby", False)),
    ("It didn't happen. The weather turned.", Ending("It", True)),
    ("I never went. My passport was still at the embassy.", Ending("", True)),
    ("We've pushed the barn dance back to the ninth.", Ending("the barn dance", True)),
    ("So I've put it off till next January.", Ending("it", True)),
    ("We called the regatta off.", Ending("the regatta", True)),
    ("I moved it to September instead.", Ending("it", True)),
    # the plan is off
    ("Holm Fair's off for me, the baby's due that week.", Ending("Holm Fair", False)),
    ("The boat trip's off.", Ending("The boat trip", True)),
    ("The Elsdon post was withdrawn.", Ending("The Elsdon post", False)),
    ("The job in Carrick fell through in June.", Ending("The job in Carrick", False)),
    ("It never happened!", Ending("It", True)),
    # the plan did not happen
    ("We never made it to Porto.", Ending("", True)),
    ("We didn't go to Valletta in the end.", Ending("", True)),
    # a verb that ends or moves a plan: no object, a pronoun, a plan noun
    ("No, we've cancelled.", Ending("", True)),
    ("We cancelled it when the flights doubled.", Ending("it", True)),
    ("I've deferred the welding course to March.", Ending("the welding course", True)),
    ("We've dropped the Orkney idea.", Ending("the Orkney idea", False)),
    ("We've put the loft conversion on hold.", Ending("the loft conversion", True)),
    ("The Orkney plan's dead, sadly.", Ending("The Orkney plan", False)),
    ("Called off. The river was in flood.", Ending("", True)),  # the plan left out, as an answer
    ("Cancelled, sadly.", Ending("", True)),
    ("Postponed until May, if the hall is free.", Ending("", True)),
    # what the speaker was doing is off; a plan moved to a date, told with its noun; no longer at its time
    ("Her ankle's swollen, so the canoeing is off until the spring.", Ending("the canoeing", True)),
    ("We had to move the reunion to the twelfth of March, the hall flooded.", Ending("the reunion", True)),
    ("The christening has been brought forward to Easter.", Ending("The christening", True)),
    ("Big change: the recital is now on the third of May.", Ending("the recital", True)),
    ("Our trip isn't in August any more.", Ending("Our trip", True)),
    ("I never went to Tromsø, the flights were cancelled.", Ending("", True)),
    ("I have no idea; none of us went in the end.", Ending("", True)),
    ("We didn't go in April after all.", Ending("", True)),
    # not going after all, put back to a time alone, moved by its noun, no later than a time, not there in the end
    ("And I'm not going to Corrow after all: the conference went online.", Ending("", True)),
    ("We're not coming in October.", Ending("", True)), ("I'm not going.", Ending("", True)),
    ("Next summer now. The van's gearbox went.", Ending("", True)), ("Next spring, now.", Ending("", True)),
    ("We're going in December instead; his leave came through late.", Ending("", True)),
    ("The wedding's now the fourteenth of December.", Ending("The wedding", True)),
    ("We moved the wedding, by the way.", Ending("the wedding", True)),
    ("The guesthouse won't open till next spring.", Ending("The guesthouse", True)),
    ("There was no chalet in the end, I'm afraid.", Ending("chalet", True)),
    ("We didn't go up in July; his knee was bad.", Ending("", True)),
])
def test_a_plan_called_off_or_put_back_is_read(sentence: str, expected: Ending) -> None:
    assert called_off(sentence) == expected


@pytest.mark.parametrize("sentence", [
    "Should we cancel?", "Is the trip off?",  # questions
    "We might cancel.", "I'd hate to call it off.", "If it rains we'll put it off till June.",  # not done
    "I'm off to bed.", "She's off sick.", "We're off to Spain!",  # a person
    "I never went to bed.", "I never went skiing as a child.",  # no plan
    "The heating's off.", "The lights are off.", "My phone is off.",  # not a plan
    "We moved the piano to the back room.", "I moved the boxes to the first floor.",  # a place, not a date
    "I never went to school on Saturdays.",
    "I put the kettle back on.", "I pushed it back into the drawer.", "We moved the sofa back.",  # no time
    "I moved it upstairs.", "He called me back.",
    "I didn't go to the gym today.", "I never went there as a kid.",  # not a plan's name
    "The battery's dead.", "The phone's on hold.",  # no plan
    "Cancelled my gym membership, finally.",  # the ending of a membership, not a plan left out
    "I'm not going to lie.", "I'm not going to the gym.", "Next time, now.", "We moved the sofa, finally.",
    "I won't start until I'm ready.", "There was no answer.",
])
def test_what_is_not_a_plan_called_off(sentence: str) -> None:
    assert called_off(sentence) is None


def test_a_speaker_is_a_person_not_a_plan() -> None:
    assert called_off("Ottoline's been cancelled.") is not None  # a name the reader does not know
    assert called_off("Ottoline's been cancelled.", frozenset({"Ottoline"})) is None


OLD_PLAN = (1, 1, "Gwenllian", "Gwenllian", "go", "to Kellaway",
            "Good. My sister and I are going to Kellaway in June to see the puffins.")
SMALL_TALK = (2, 1, "Ambrose", "Ambrose", "prefer", "my garden", "I prefer my garden. Any news from your brother?")
ASKED = (3, 2, "Ambrose", "Ambrose", "see", "you", "You look tired. Still off to Kellaway in June?")
CANCELLED = (4, 2, "Gwenllian", "Gwenllian", "double", "the ferry fares",
             "No, we've cancelled. The ferry fares doubled.")


def test_a_plan_cancelled_without_a_name_links_the_plan_the_question_before_names() -> None:
    units, texts = _chat(OLD_PLAN, SMALL_TALK, ASKED, CANCELLED)
    units = [u for u in units if u.first_turn != "D2:3"]  # the question keeps no claim
    assert _changed(units, texts) == [("n/u1", "n/u4")]


def test_without_the_question_nothing_is_named() -> None:
    asked_other = ASKED[:6] + ("You look tired. How was the christening?",)
    units, texts = _chat(OLD_PLAN, SMALL_TALK, asked_other, CANCELLED)
    units = [u for u in units if u.first_turn != "D2:3"]
    assert _changed(units, texts) == []


def test_a_plan_put_off_by_name_links_the_plan_that_names_it() -> None:
    put_off = (3, 2, "Gwenllian", "Gwenllian", "flare up", "my knee",
               "My knee flared up, so we've put Kellaway off until next spring.")
    units, texts = _chat(OLD_PLAN, SMALL_TALK, put_off)
    assert _changed(units, None) == []  # the triples alone: (Gwenllian | flare up | my knee) changes nothing
    assert _changed(units, texts) == [("n/u1", "n/u3")]
