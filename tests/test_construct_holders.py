"""Third persons' homes, jobs and partners (construct/holders.py with the readers of construct/residence.py,
occupation.py and partner_status.py): who a statement is about, from the words of the dialogue alone, and the
change of that person's state it makes across sessions ("My uncle's still a ranger at Gorsemoor" -> "How's your
uncle?" "He retired in March.").
"""

from __future__ import annotations

import pytest

from qgmem.construct.holders import Persons, mentions, proper_names, resolve
from qgmem.construct.named_state import NamedState
from qgmem.construct.occupation import job, jobs_of_others
from qgmem.construct.partner_status import (ENGAGED, MARRIED, SEEING, SINGLE, Status, partner_status,
                                           statuses_of_others)
from qgmem.construct.residence import home, homes_of_others
from tests.test_construct_turn_changes import _changed, _chat


def _keys(text: str, speaker: str = "Ilka", addressee: str = "Boris") -> list[set[str]]:
    names = proper_names([text])
    return [set(m.keys) for m in mentions(text, speaker, addressee, names)]


def test_a_person_is_keyed_by_whose_relative_they_are_or_by_name() -> None:
    assert _keys("My uncle and your sister met at the fair.") == [{"Ilka's uncle"}, {"Boris's sister"}]
    assert _keys("Well, Dad's moved to Tarrowby.") == [{"Ilka's dad"}]  # a kin word as a name is the speaker's
    assert _keys("My partner Wendeline works from home.") == [{"Ilka's partner", "Wendeline"}]
    # a name is a capitalised word the conversation writes inside a sentence, not only after a place preposition
    assert _keys("Still here. I saw Odalys in Tarrowby.") == [{"Odalys"}]


def test_a_pronoun_takes_the_latest_person_of_its_gender_else_of_either_and_never_a_speaker() -> None:
    names = frozenset({"Odalys", "Ilka", "Boris"})
    ctx = mentions("My brother will bring Odalys, I expect.", "Ilka", "Boris", names)
    assert resolve(("He",), ctx, "Ilka", "Boris", names) == {"Ilka's brother"}  # not the later name
    assert resolve(("she",), ctx, "Ilka", "Boris", names) == {"Odalys"}
    assert resolve(("they",), ctx, "Ilka", "Boris", names) is None  # "they" wants a plural
    assert resolve(("they",), mentions("How are your parents?", "Boris", "Ilka", names), "Ilka", "Boris",
                   names) == {"Ilka's parents"}
    assert resolve(("she",), mentions("Ask Boris.", "Ilka", "Boris", names), "Ilka", "Boris", names) is None
    assert resolve(("Still", "he"), ctx, "Ilka", "Boris", names) == {"Ilka's brother"}  # first resolvable word


def test_a_turn_without_units_takes_the_other_speaker_for_its_my_and_your() -> None:
    texts = {"D1:1": "My aunt is still a ferry pilot at Kessock.", "D2:1": "How's your aunt?",
             "D2:2": "She retired in April."}
    persons = Persons(texts, {"D1:1": "Ilka", "D2:2": "Ilka"})  # D2:1 has no unit: Boris asked it
    persons.people = ["Boris", "Ilka"]  # the conversation's two speakers (one of them kept no unit here)
    assert persons.speaker["D2:1"] is None  # with one known speaker the other is not known
    persons = Persons(texts, {"D1:1": "Ilka", "D2:2": "Ilka", "D0": "Boris"})
    assert persons.speaker["D2:1"] == "Boris"
    assert persons.resolve("D2:2", ("She",), 0) == {"Ilka's aunt"}


@pytest.mark.parametrize("read, text, words, value", [
    (homes_of_others, "My dad's moved to Penzhallow!", "My dad", NamedState(frozenset({"Penzhallow"}), True)),
    (homes_of_others, "He still lives on his own in the cottage at Lenwade Cross.", "He",
     NamedState(frozenset({"Lenwade Cross"}), False)),
    (homes_of_others, "Mum says she's got a flat in Stavemoor with her boyfriend.", "she",
     NamedState(frozenset({"Stavemoor"}), True)),
    (jobs_of_others, "My husband's still a foreman at Gethwick Steel.", "My husband",
     NamedState(frozenset({"Gethwick Steel"}), False)),
    (jobs_of_others, "No, he took a job at an agency in the city centre.", "he", NamedState(frozenset({"agency"}), True)),
    (jobs_of_others, "He retired at the end of May.", "He", NamedState(frozenset(), False, ended=True)),
])
def test_third_persons_homes_and_jobs_are_read_with_the_words_that_name_them(read, text, words, value) -> None:
    (got,) = read(text)
    assert got[0][0] == words and got[2] == value


def test_third_persons_partner_status_is_read_with_the_words_that_name_them() -> None:
    assert [(w[0], s.value, s.partner) for w, _, s in statuses_of_others(
        "Still in Marlby, and he's seeing a girl called Ysolde who works at the garden centre.")] == [
        ("Still", SEEING, "Ysolde")]  # "Still" is a candidate; the resolver passes over it
    assert [(w[0], s.value) for w, _, s in statuses_of_others("Big news. He and Ysolde finished things in April.")] \
        == [("He", SINGLE)]
    assert [s.value for _, _, s in statuses_of_others("My sister's still married to Arvo, the fisherman.")] == [MARRIED]
    assert [s.value for _, _, s in statuses_of_others("She married Cornelis from the bowls club!")] == [MARRIED]
    assert [s.value for _, _, s in statuses_of_others("Emrys proposed to Valka on the pier.")] == [ENGAGED]


def test_a_third_persons_statement_is_not_the_speakers_and_the_speakers_is_not_theirs() -> None:
    assert home("My dad's moved to Penzhallow!") is None and job("He retired at the end of May.") is None
    assert partner_status("My sister's still married to Arvo.") is None
    assert homes_of_others("We've moved to Penzhallow!") == () and statuses_of_others("I'm single again.") == ()
    assert partner_status("I'm very happily single, thank you.").value == SINGLE  # adverbs before "single"


UNCLE = (1, 1, "Ilka", "Ilka's uncle", "be at", "the quarry in Gorsemoor",
         "Busy. My uncle's still at the quarry in Gorsemoor, thirty years this spring.")


def test_a_third_persons_change_told_with_a_pronoun_links_their_earlier_state() -> None:
    units, texts = _chat(UNCLE, (2, 1, "Boris", "Boris", "want", "a new bike", "I want a new bike."),
                         (3, 2, "Boris", "Boris", "say", "How's your uncle?", "How's your uncle?"),
                         (4, 2, "Ilka", "they", "give", "a clock",
                          "He retired at the end of March. They gave him a clock and a long speech."))
    assert _changed(units, texts) == [("n/u1", "n/u4")]


def test_a_third_persons_move_links_their_earlier_home() -> None:
    units, texts = _chat((1, 1, "Ilka", "she", "rent", "a cottage",
                          "Yes, my sister's renting a cottage at the top of Kelsby, with a view of the castle."),
                         (2, 1, "Boris", "Boris", "like", "castles", "I like castles."),
                         (3, 2, "Ilka", "Ilka", "have", "news", "I have news. She's got a flat in Ormsworth now."))
    assert _changed(units, texts) == [("n/u1", "n/u3")]


def test_no_link_between_two_persons_nor_for_an_end_told_twice_nor_an_end_after_a_weak_habit() -> None:
    sister = (3, 2, "Ilka", "Ilka's sister", "work", "at the bakery",
              "My sister works at the Rowan bakery in Kelsby.")
    units, texts = _chat(UNCLE, (2, 1, "Boris", "Boris", "want", "a new bike", "I want a new bike."), sister)
    assert _changed(units, texts) == []  # the uncle's job and the sister's are two persons' states
    lost = (1, 1, "Ilka", "things", "be", "tough", "Since I lost my job at the Rowan bakery, things have been tough.")
    again = (3, 2, "Ilka", "it", "be", "tough", "It's been tough going since I lost my job.")
    units, texts = _chat(lost, (2, 1, "Boris", "Boris", "want", "a new bike", "I want a new bike."), again)
    assert _changed(units, texts) == []
    habit = (1, 1, "Ilka", "Ilka", "expand", "my stall", "Now I can expand my stall and I run it all day now.")
    units, texts = _chat(habit, (2, 1, "Boris", "Boris", "want", "a new bike", "I want a new bike."), again)
    assert _changed(units, texts) == []


def test_a_statement_with_a_tag_question_is_read_and_a_question_is_not() -> None:
    (got,) = jobs_of_others("Ilse's just started as a junior doctor at the hospital in Prestbury, did I tell you?")
    assert got[2] == NamedState(frozenset({"Prestbury"}), True)
    assert jobs_of_others("Has Ilse started as a junior doctor at the hospital in Prestbury?") == ()
    assert job("I retired at Easter, didn't I say?") == NamedState(frozenset(), False, ended=True)
    # an occupation since a month is a beginning (construct/occupation.py)
    assert job("Since June I've been a trainee at a practice in Lanwick.") == NamedState(frozenset({"Lanwick"}), True)
    assert [s.value for _, _, s in statuses_of_others("My brother and Derin broke it off in January.")] == [SINGLE]


def test_a_partner_by_a_possessive_and_the_idioms_of_an_engagement_begun_or_ended() -> None:
    assert partner_status("My girlfriend Kadrie will want to come.") == Status(SEEING, "Kadrie")
    assert partner_status("My fiancée hates weddings.").value == ENGAGED
    assert partner_status("My ex-boyfriend called.") is None and partner_status("I bought a ring.") is None
    assert [(w, s.value) for w, _, s in statuses_of_others("So Dagrun finally popped the question!")] == [
        (("So", "Dagrun"), ENGAGED)]
    assert [s.value for _, _, s in statuses_of_others("Piet gave Otto the ring back in October.")] == [SINGLE]
    assert [(w, s.value) for w, _, s in statuses_of_others("His girlfriend is lovely.")] == [(("His",), SEEING)]


def test_a_new_engagement_changes_a_partner_told_by_a_possessive() -> None:
    units, texts = _chat((1, 1, "Ilka", "Kadrie", "want", "to come",
                          "A barn wedding! My girlfriend Kadrie will want to come, she cries at every wedding."),
                         (2, 1, "Boris", "Boris", "want", "a new bike", "I want a new bike."),
                         (3, 2, "Ilka", "Ilka", "hope", "the mend", "We got engaged in September, Kadrie and me."))
    assert _changed(units, texts) == [("n/u1", "n/u3")]


def test_a_partner_had_or_still_with_a_named_one_and_a_role_on_a_named_line() -> None:
    assert [(w[0], s.value) for w, _, s in statuses_of_others("My daughter Ines has a boyfriend now.")] == [
        ("My daughter", SEEING)]
    assert partner_status("I'm still with Dagmar, before you ask.") == Status(SEEING, None)
    assert partner_status("I'm still with Hartley Brothers, the removals firm.") is None  # a firm has two names
    assert job("Yes, I'm still a ticket inspector on the Fellbeck line.") == NamedState(frozenset({"Fellbeck"}), False)
