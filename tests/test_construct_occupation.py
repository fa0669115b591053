"""Where a speaker works (construct/occupation.py, read by construct/named_state.py) and the change of job it
tells through construct/turn_changes.py: the readings, a new job that shares no word with the old one, and
the one spoken to after a turn that kept no unit ("Look at you in a suit! So you're selling houses for ...").
"""

from __future__ import annotations

import pytest

from qgmem.construct.named_state import NamedState
from qgmem.construct.occupation import job, jobs_of_others
from tests.test_construct_turn_changes import _changed, _chat


@pytest.mark.parametrize("text, names, begun", [
    ("I'm a sous chef at the Gilded Pike in Hallowmere, split shifts all week.", {"Gilded Pike", "Hallowmere"},
     False),
    ("Boring but stable. I've worked at Pell & Marsh for six years.", {"Pell & Marsh"}, False),
    ("Thirty-eight years I've driven for Brigwell Coaches.", {"Brigwell Coaches"}, False),
    ("I'm still a ward clerk on the children's ward at Penmorrow Hospital.", {"Penmorrow Hospital"}, False),
    ("I've trained as a phlebotomist at Penmorrow.", {"Penmorrow"}, True),
    ("I'm a junior accountant at Pemberly Vance and I want to present better.", {"Pemberly Vance"}, False),
    ("I'm still at Tellwise, answering broadband complaints.", {"Tellwise"}, False),
    ("I'm still on the grill at the Tallowmere Bistro, six nights out of seven.", {"Tallowmere Bistro"}, False),
    ("I fix buses at the Stanway depot all day.", {"Stanway"}, False),
    ("I stack shelves on the night crew at the Dewhurst superstore now.", {"Dewhurst"}, False),
    ("So you're selling houses for Drummond Lisle now!", {"Drummond Lisle"}, False),
    ("I've been at the seed bank at Ostley Gardens since June.", {"Ostley Gardens"}, True),
    ("I took a job as a finance analyst at the Lowmarsh water company.", {"Lowmarsh"}, True),
    ("I've started at the Hollerby animal clinic as a care assistant.", {"Hollerby"}, True),
    ("Big change: I've been taken on full-time at Inkwell and Hare.", {"Inkwell and Hare"}, True),
    ("And the vets took me on as a trainee nurse.", set(), True),
    ("The hotel made me assistant manager.", set(), True),
    ("I started a new job as an analyst last week.", set(), True),
    ("I milk sixty goats at my aunt's farm, twice a day.", {"farm"}, False),  # a place of work, no name
    ("I drive a gritter for the council all winter.", {"council"}, False),
    ("Still the same: I'm still at the oil depot, twelve-hour shifts.", {"depot"}, False),
    ("I teach maths at the old grammar school, and the exams start tomorrow.", {"school"}, False),  # an article
    ("I usually fix buses at the Stanway depot.", {"Stanway"}, False),  # an adverb before the verb
    # a job held since a recent time began then; a business of one's own opened; training as one
    ("I've been running the crane at the Tauranga port since June.", {"Tauranga"}, True),
    ("I've worked at Pell & Marsh since the start of May.", {"Pell & Marsh"}, True),
    ("No, I opened my own little shop in Kpandu in February.", {"Kpandu"}, True),
    ("We set up our own firm in May.", set(), True),
    ("I'm training as a turbine technician with Quarrow Renewables.", {"Quarrow Renewables"}, True),
    ("I left the wheel in June; the forestry office hired me as a ranger.", set(), True),
    ("Behind a desk. The port office in Khasab hired me in March.", set(), True),
    ("I left the bank in May and went into business with my cousin.", set(), True),
    ("I've hung up the apron: since November I'm assistant pharmacist at the chemist's.", set(), True),
    ("Look at you, head chef at the Ostler's Table!", {"Ostler's Table"}, True),
    # a habit told with the hours of work: a job, begun when told as the present one
    ("I weigh fish at the cooperative in Kalokol, the early shift from five to one.", {"Kalokol"}, False),
    ("I drive the tram out to Pindle, earlies one week and lates the next.", set(), False),
    ("I ice wedding cakes for a living these days.", set(), True),
])
def test_a_job_is_read_with_its_organisations(text: str, names: set[str], begun: bool) -> None:
    assert job(text) == NamedState(frozenset(names), begun)


@pytest.mark.parametrize("text", [
    "Are you still at Tellwise?",  # a question
    "I've stayed at the Hilton twice.",  # a stay, not work
    "I'd never work for Blackmoss.", "I want to start at Inkwell.",  # negated, a wish
    "My husband's still a foreman at Gethin Steel.", "She works at the Fairmead vets.",  # a third person's job
    "I shop at Lidl now.", "I met her at Rook's.", "I had a great time at the Louvre.", "We ate at Nando's.",
    "I go to yoga at Fitness First.", "I love hiking in Yosemite.", "I'm at Disneyland!",
    "I'm in love with Paris.", "I also use it to stand up for the Harbour Trust.", "I worked with Rust.",
    "Meet you tonight at Dolan's!", "I started with podcasts and maps.",
    "I buy bread at the bakery on the corner.", "I'm running for office again.",  # an errand; no place of work
    "I'm on the hunt for a good spot for my pottery studio.",  # "for my ...": not where one works
    "We actually met in an engineering class in college.",  # an adverb is no verb of work
    "I started my own blog.", "I hung up my coat.", "I hung up my coat and sat down.",  # no business, no trade's end
    "I left the office at six.", "I left the shop in a hurry.",  # a place left for the day
    "I swim every morning before my shift.",  # a pastime beside one's own shift
])
def test_what_tells_no_job(text: str) -> None:
    assert job(text) is None


def test_the_same_organisation_by_a_shorter_name_is_no_change() -> None:
    assert not job("Yes, I'm still at Fairholme, and I love it.").differs(
        job("I work at the Fairholme Observatory, running the visitor centre."))


OLD_JOB = (1, 1, "Ilse", "Ilse", "be", "a receptionist",
           "I'm a receptionist at a dental practice in Tarnby, eight till four.")
SMALL_TALK = (2, 1, "Oren", "Oren", "want", "a new bell", "I want a new bell for mine. Any tips?")
STARTED = (3, 2, "Ilse", "Ilse", "go up", "my pay",
           "Good news: I've started at the Hollerby animal clinic as a care assistant, and my pay has gone up.")


def test_a_new_job_links_the_old_one_without_a_shared_word() -> None:
    units, texts = _chat(OLD_JOB, SMALL_TALK, STARTED)
    assert _changed(units, texts) == [("n/u1", "n/u3")]


def test_a_job_said_of_the_one_spoken_to_after_a_turn_without_units_is_theirs() -> None:
    told = (3, 2, "Oren", "Ilse", "sell", "houses",
            "Look at you in a suit! So you're selling houses for Lisle & Co now!")
    units, texts = _chat(OLD_JOB, SMALL_TALK, told)  # Ilse's greeting between Oren's turns kept no unit
    assert _changed(units, texts) == [("n/u1", "n/u3")]


@pytest.mark.parametrize("text", [
    "I operate one of the dockside cranes now, it's amazing up there.",
    "So you're giving tours at the lighthouse now!",
    "Since March I drive the library van round the villages.",
])
def test_a_work_habit_told_as_the_present_one_is_a_weak_beginning(text: str) -> None:
    assert job(text) == NamedState(frozenset(), True, weak=True)


@pytest.mark.parametrize("text", [
    "I'm learning the cello now, slowly.", "I'm totally into chess right now.", "I'm doing much better now.",
    "I'm trying yoga now.", "I walked the dog along the beach now and then.",
])
def test_learning_trying_doing_or_the_past_tells_no_work_habit(text: str) -> None:
    assert job(text) is None


def test_a_weak_beginning_changes_a_named_job_only() -> None:
    crane = (3, 2, "Ilse", "Ilse", "operate", "one of the cranes", "I operate one of the dockside cranes now.")
    units, texts = _chat(OLD_JOB, SMALL_TALK, crane)
    assert _changed(units, texts) == [("n/u1", "n/u3")]
    hobby = (1, 1, "Ilse", "Ilse", "bake", "sourdough", "I bake sourdough for the neighbours now.")
    units, texts = _chat(hobby, SMALL_TALK, crane)  # two present habits: neither names a job to change
    assert _changed(units, texts) == []


@pytest.mark.parametrize("text", ["I'm officially a retired man. Last Friday was my final round.",
                                  "Retired, after forty-two years.", "I'm still unemployed, forty applications.",
                                  "I lost my job when the mill shut.", "I was made redundant in May.",
                                  "I hung up my hard hat in July.", "So you've finally hung up your spanners!",
                                  "I'm a man of leisure these days.", "I hear you've left the bank and drive a bus."])
def test_a_job_ended_with_nothing_after_it_is_a_value(text: str) -> None:
    assert job(text) == NamedState(frozenset(), False, ended=True)


def test_a_job_after_none_and_none_after_a_job_are_changes_and_an_end_told_twice_is_one() -> None:
    ended = NamedState(frozenset(), False, ended=True)
    named = NamedState(frozenset({"Kessler Print"}), False)
    assert ended.differs(named) and NamedState(frozenset(), True).differs(ended) and not ended.differs(ended)


def test_a_job_at_a_place_of_work_without_a_name_changes_to_another() -> None:
    old = (1, 1, "Ilse", "Ilse", "milk", "sixty goats", "I milk sixty goats at my aunt's farm, twice a day.")
    new = (3, 2, "Ilse", "Ilse", "fit out", "narrowboats",
           "From June on I fit out narrowboats at the boatyard in Pellow. No more early milking.")
    assert _changed(*_chat(old, SMALL_TALK, new)) == [("n/u1", "n/u3")]


@pytest.mark.parametrize("text", ["I'm a ferryman now, since April; early starts.",
                                  "Since the spring I've been the assistant librarian.",
                                  "So you're the new caretaker!", "My brother became a paramedic in June."])
def test_an_occupation_with_a_mark_of_its_beginning_is_a_new_job(text: str) -> None:
    states = [job(text)] + [state for _, _, state in jobs_of_others(text)]
    assert any(s is not None and s.begun and not s.weak for s in states)


@pytest.mark.parametrize("text", ["I'm a good cook these days.", "I'm a much better driver now.",
                                  "I'm a vegetarian now.", "I can solve a crossword in ten minutes these days."])
def test_a_judgement_a_diet_or_an_ability_is_no_new_job(text: str) -> None:
    state = job(text)
    assert state is None or state.weak


def test_an_occupation_alone_is_a_job_a_beginning_changes() -> None:
    old = (1, 1, "Ilse", "Ilse", "be", "a freelance translator", "I'm a freelance translator, mostly contracts.")
    new = (3, 2, "Ilse", "Ilse", "be", "the office manager",
           "Since October I'm the office manager at a shipping firm in Rellow.")
    assert job(old[-1]) == NamedState(frozenset(), False)
    assert _changed(*_chat(old, SMALL_TALK, new)) == [("n/u1", "n/u3")]


def test_an_ending_changes_the_job_before_a_present_ability() -> None:
    """"I can ... these days" tells no job; a retirement after it changes the job told before it."""
    ability = (2, 1, "Ilse", "Ilse", "read", "a tide table", "I can read a tide table in my head these days.")
    retired = (3, 2, "Ilse", "Ilse", "ring", "the bell", "I've retired. I rang the bell for the last time in May.")
    assert _changed(*_chat(OLD_JOB, ability, retired)) == [("n/u1", "n/u3")]
