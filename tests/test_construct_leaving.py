"""Someone leaving a group or a pastime, or the group ending (construct/leaving.py), and the change it tells
through construct/turn_changes.py: the sentence readings, and the link a turn makes when it names what was
left by a pronoun or not at all and the question just before it names it ("Still rowing with the Tarnside
crew?" -> "No, I dropped it in March.").

Units are written by hand as the rule extractor makes them: for "I dropped it in March." it keeps a claim
that names nothing of the crew.
"""

from __future__ import annotations

import pytest

from qgmem.construct.ending_reader import Ending
from qgmem.construct.leaving import leaving
from tests.test_construct_turn_changes import _changed, _chat


@pytest.mark.parametrize("sentence, expected", [
    # a person quits, what was left named by a pronoun or nothing: the thing is named elsewhere
    ("No, I dropped it in March. My knee gave out.", Ending("it", True)),
    ("I packed it in after the summer.", Ending("it", True)),
    ("I finished with the Owls after my knee went.", Ending("the Owls", False)),
    ("And I've withdrawn from Tervola.", Ending("Tervola", False)),
    ("I stood down from the committee in January, by the way.", Ending("the committee", True)),
    ("I walked out of the club in March.", Ending("the club", True)),
    ("She gave it up in the spring.", Ending("it", True)),
    ("I stopped after a month.", Ending("", True)),
    ("We've stopped going.", Ending("", True)),
    ("I stood down last year when my hip went.", Ending("", True)),
    ("I'm not a member any more.", Ending("", True)),
    ("I played my last match with them in May.", Ending("them", True)),
    # ... by a common noun: named elsewhere too
    ("I gave up the orchestra.", Ending("the orchestra", True)),
    ("Our daughter's packed in the Brownies.", Ending("the Brownies", False)),
    ("He's given tennis up for the chess club.", Ending("tennis", True)),
    ("I let the gym membership lapse.", Ending("the gym membership", True)),
    ("We sold the boat and let the Harbour Yacht Club go at the same time.", Ending("the Harbour Yacht Club", False)),
    ("We didn't renew at Hollowmere in April.", Ending("Hollowmere", False)),
    # a group ends under its members
    ("The Marsh Lane Harriers folded in June.", Ending("The Marsh Lane Harriers", False)),
    ("The band broke up when the singer moved away.", Ending("The band", True)),
    ("The Wednesday lot disbanded in the autumn.", Ending("The Wednesday lot", False)),
    ("The quiz team carries on without me.", Ending("The quiz team", True)),
    ("My knees gave out in July, and I let the class go on without me.", Ending("the class", True)),
    ("Pellbridge can manage without my bass.", Ending("Pellbridge", False)),
    # a role's token handed back or on, or hung up
    ("I handed my whistle back to the league after the final.", Ending("my whistle", True)),
    ("He's handed the bakery over to his daughter.", Ending("the bakery", True)),
    ("He hung up his boots after last season.", Ending("", True)),
    ("So you've finally hung up your apron!", Ending("", True)),
    # let go, or done with it
    ("The depot let me go in March.", Ending("", True)),
    ("The plant let us all go in October.", Ending("", True)),
    ("The exporter closed its shed in July and let fifty of us go, me included.", Ending("", True)),
    ("They laid off forty of us.", Ending("", True)),
    ("The depot closed in March.", Ending("The depot", True)),
    ("The bakery closed for good last year.", Ending("The bakery", True)),
    ("I'm done with amateur dramatics.", Ending("amateur dramatics", True)),
    ("In April I told them I was done with the barge.", Ending("the barge", True)),
    ("I've put the park behind me.", Ending("the park", True)),
    ("I left the chess club in October.", Ending("the chess club", True)),
    # left, walked away, put down for good, let the membership lapse, parted, seen the last of, a last time
    ("I've left it. Rehearsals were impossible.", Ending("it", True)),
    ("I walked away in August, when they doubled the dues.", Ending("", True)),
    ("So I stepped out at the start of August.", Ending("", True)),
    ("Your brother says you've put the oar down for good.", Ending("the oar", True)),
    ("I let my membership of the hill club lapse in April.", Ending("my membership of the hill club", True)),
    ("I'm not in the chama any more.", Ending("the chama", True)),
    ("The cooperative and I parted in January.", Ending("The cooperative", True)),
    ("Your cousin tells me the orchestra has seen the last of you.", Ending("the orchestra", True)),
    ("I haven't gone back since the concert; that was my last with them.", Ending("", True)),
    ("I bowed out of the choir after the carol service.", Ending("the choir", True)),
    ("I handed in my rope to the band in January.", Ending("my rope", True)),
    ("I withdrew my membership in June; the dues went up.", Ending("my membership", True)),
])
def test_leaving_a_group_or_pastime_is_read(sentence: str, expected: Ending) -> None:
    assert leaving(sentence) == expected


@pytest.mark.parametrize("sentence", [
    "Did you drop it?", "Are you still in the choir?",  # questions
    "I'd never give it up.", "I want to quit.", "I might quit next spring.", "I'm thinking of packing it in.",
    "I nearly quit.", "Don't give up!", "I won't stop.",  # not done
    "I dropped it on the kitchen floor.", "We stopped at the bakery on the way.", "I stopped by the library.",
    "It stopped raining.", "I stopped and laughed.",  # a bare verb with more than a time after it
    "I just let it go.", "I let the dog go out.",  # a feeling; a thing let out
    "I gave the kids their tea in the garden.", "He gave me a lift.", "I picked it up.",
    "My parents split up when I was six.", "We broke up last year.", "The kids broke up for the holidays.",  # persons
    "It's not in them to complain.", "The shop closed early today.", "The shop closed at six.",
    "Let us all go to the pub.", "I put the kettle on behind me.",
    "I handed the salt over to her.", "She gave my book back yesterday.",  # a thing passed, no role given up
    "Let me go and check.", "Are you done with the scissors?",
    "I left it in the car.", "I stepped out for a coffee.", "I put the phone down.",  # a thing left, an errand
    "We left the gym early.", "I left the house at six.",  # leaving a place
])
def test_what_is_not_leaving(sentence: str) -> None:
    assert leaving(sentence) is None


def test_a_speaker_is_a_person_not_a_group() -> None:
    assert leaving("Tomasz can manage without me.") is not None  # a name the reader does not know
    assert leaving("Tomasz can manage without me.", frozenset({"Tomasz"})) is None


OLD_CREW = (1, 1, "Leontyne", "Leontyne", "row", "with the Tarnside crew",
            "Shattered. I row with the Tarnside crew three mornings a week, out on the lake at six.")
SMALL_TALK = (2, 1, "Casimir", "Casimir", "prefer", "my bed", "I prefer my bed at six. Any news from your sister?")
ASKED = (3, 2, "Casimir", "Casimir", "see", "you", "You look rested. Still rowing with the Tarnside crew?")
DROPPED = (4, 2, "Leontyne", "Leontyne", "give out", "my knee", "No, I dropped it in March. My knee gave out.")


def test_a_pastime_dropped_by_pronoun_links_the_membership_the_question_before_names() -> None:
    units, texts = _chat(OLD_CREW, SMALL_TALK, ASKED, DROPPED)
    units = [u for u in units if u.first_turn != "D2:3"]  # the question keeps no claim
    assert _changed(units, texts) == [("n/u1", "n/u4")]


def test_without_the_question_a_pronoun_names_nothing() -> None:
    asked_other = ASKED[:6] + ("You look rested. How was the wedding?",)
    units, texts = _chat(OLD_CREW, SMALL_TALK, asked_other, DROPPED)
    units = [u for u in units if u.first_turn != "D2:3"]
    assert _changed(units, texts) == []


def test_a_group_that_ended_links_the_membership_that_names_it() -> None:
    folded = (3, 2, "Leontyne", "Leontyne", "sleep", "till eight",
              "The Tarnside crew folded in April, so I sleep till eight.")
    units, texts = _chat(OLD_CREW, SMALL_TALK, folded)
    assert _changed(units, None) == []  # the triples alone: (Leontyne | sleep | till eight) changes nothing
    assert _changed(units, texts) == [("n/u1", "n/u3")]
