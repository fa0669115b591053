"""Changes told by a whole turn (construct/turn_changes.py): a turn that tells a change none of its triples
carries links its best unit to the earlier state of the same person its words name, and the cases where
no state changed form no link.

Units are written by hand as the rule extractor makes them (one claim per clause, often the wrong one), with
the turn texts beside them, as `build_memory` passes them.
"""

from __future__ import annotations

import dataclasses

from qgmem.construct.state_table import StateTable
from qgmem.construct.traces import TraceConfig, build_traces
from qgmem.construct.change_sentences import tells_change
from qgmem.construct.turn_changes import turn_links
from qgmem.types import AtomicUnit


def _u(i: int, session: int, speaker: str, subject: str, relation: str, obj: str, text: str) -> AtomicUnit:
    turn = f"D{session}:{i}"
    return AtomicUnit(id=f"n/u{i}", namespace="n", session_id=f"S{session}", text=f"{speaker}: {text}",
                      first_turn=turn, last_turn=turn, turn_ids=[turn], speaker=speaker, subject=subject,
                      relation=relation, object=obj, utterance_time=f"2023-0{session}-10")


def _chat(*rows: tuple[int, int, str, str, str, str, str]) -> tuple[list[AtomicUnit], dict[str, str]]:
    """Units, one per turn, and the turn texts (a row's text is the whole turn; the unit keeps the sentence
    of its claim, the one that holds its object, else the first)."""
    def claim(text: str, obj: str) -> str:
        parts = [p for p in text.split(". ") if obj.split()[-1] in p]
        return (parts or text.split(". "))[0]

    units = [_u(i, s, sp, subj, rel, obj, claim(text, obj)) for i, s, sp, subj, rel, obj, text in rows]
    return units, {u.first_turn: row[6] for u, row in zip(units, rows)}


def _links(*rows: tuple[int, int, str, str, str, str, str]) -> dict[int, tuple[int, str]]:
    """`turn_links` of a hand-written chat (`_chat`) with no update so far: {unit row: (target row, kind)}."""
    return turn_links(*_chat(*rows), {})


def _changed(units: list[AtomicUnit], texts: dict[str, str] | None) -> list[tuple[str, str]]:
    """(superseded unit, the update after it in its trace) pairs, by unit id."""
    new, traces = build_traces(units, TraceConfig(), turn_texts=texts)
    by = {u.id: u for u in new}
    return sorted((e, uid) for t in traces for k, (uid, role) in enumerate(zip(t.unit_ids, t.roles))
                  if role == "update" for e in t.unit_ids[:k] if by[e].superseded)


OLD_JOB = (1, 1, "Tamsin", "Tamsin", "fix", "bicycles",
           "Not bad. I fix bicycles at the Quayside cycle workshop, mostly punctures.")
SMALL_TALK = (2, 1, "Oren", "Oren", "want", "a new bell", "I want a new bell for mine. Any tips?")


def test_a_turn_that_tells_a_change_links_the_state_its_words_name() -> None:
    units, texts = _chat(OLD_JOB, SMALL_TALK,
                         (3, 2, "Tamsin", "Tamsin", "be", "glad",
                          "I'm glad it's over. I handed in my notice at the cycle workshop in May."))
    assert _changed(units, None) == []  # the triples alone: (Tamsin | be | glad) changes nothing
    assert _changed(units, texts) == [("n/u1", "n/u3")]


def test_a_change_said_about_the_one_spoken_to_is_theirs() -> None:
    units, texts = _chat(OLD_JOB, SMALL_TALK, (3, 2, "Tamsin", "Tamsin", "have", "a long week", "I had a long week."),
                         (4, 2, "Oren", "Oren", "be", "proud",
                          "So you're running the cycle workshop at Quayside now! Congratulations."))
    assert _changed(units, texts) == [("n/u1", "n/u4")]


def test_no_link_without_a_change_a_later_session_or_the_same_person() -> None:
    restated = (3, 2, "Tamsin", "Tamsin", "be", "busy", "Busy again. The cycle workshop at Quayside is packed.")
    assert _changed(*_chat(OLD_JOB, SMALL_TALK, restated)) == []  # a restatement tells no change
    same_session = (3, 1, "Tamsin", "Tamsin", "be", "glad", "I'm quitting the cycle workshop at Quayside now.")
    assert _changed(*_chat(OLD_JOB, SMALL_TALK, same_session)) == []
    other = (3, 2, "Oren", "Oren", "be", "glad", "I work at the cycle workshop at Quayside now.")
    assert _changed(*_chat(OLD_JOB, SMALL_TALK, other)) == []  # Oren's words name Tamsin's state


def test_a_negated_change_a_question_a_duration_or_a_skill_is_no_change() -> None:
    for said in ("I won't quit the cycle workshop at Quayside, whatever happens.",
                 "Should I quit the cycle workshop at Quayside?",
                 "I've been at the cycle workshop at Quayside for six years now.",
                 "I can fix a wheel at the cycle workshop at Quayside in ten minutes now.",
                 "I'm at the cycle workshop at Quayside for now, it's fine.",  # for the time being
                 "I'm going to ring the cycle workshop at Quayside now, wish me luck.",  # a plan
                 "The cycle workshop at Quayside is quiet now the students have gone."):  # "now" as a conjunction
        units, texts = _chat(OLD_JOB, SMALL_TALK, (3, 2, "Tamsin", "Tamsin", "be", "x", said))
        assert turn_links(units, texts, set()) == {}, said


def test_a_word_every_turn_uses_links_nothing_in_a_long_conversation() -> None:
    rows = [OLD_JOB, SMALL_TALK]
    for k in range(3, 203):  # 200 turns of the two that all talk about the cycle workshop
        who = "Tamsin" if k % 2 else "Oren"
        rows.append((k, 1 + k // 60, who, who, "like", "it", f"The workshop is fun, {k} bikes today."))
    rows.append((203, 5, "Tamsin", "Tamsin", "be", "done", "I'm done with the workshop now, time for a change."))
    units, texts = _chat(*rows)
    assert all(u != "n/u203" for _, u in _changed(units, texts))


def test_a_turn_whose_update_already_supersedes_the_state_is_left_to_it() -> None:
    units, texts = _chat(OLD_JOB, SMALL_TALK,
                         (3, 2, "Tamsin", "Tamsin", "be", "glad",
                          "I'm glad it's over. I handed in my notice at the cycle workshop in May."))
    assert turn_links(units, texts, {}) == {2: (0, "change")}
    assert turn_links(units, texts, {2: {0}}) == {}  # its update supersedes the job already
    # its one unit is an update of the other speaker's remark, which shares none of its words: the words decide
    assert turn_links(units, texts, {2: {1}}) == {2: (0, "change")}
    units.append(_u(4, 1, "Tamsin", "Tamsin", "want", "a holiday", "I want a holiday"))
    texts = {**texts, "D1:4": "I want a holiday."}
    assert turn_links(units, texts, {2: {3}}) == {}  # an update of the speaker's own earlier word stays
    # another unit of the turn, not an update, links the state the update left alone
    extra = _u(4, 2, "Tamsin", "Tamsin", "sell", "my old bell", "I sold my old bell")
    units.append(dataclasses.replace(extra, first_turn="D2:3", last_turn="D2:3", turn_ids=["D2:3"]))
    assert turn_links(units, texts, {2: {3}}) == {4: (0, "change")}


def test_a_habit_at_a_named_place_is_a_job_that_a_new_one_replaces() -> None:
    units, _ = _chat((1, 1, "Tamsin", "Tamsin", "fix", "bicycles", "I fix bicycles at the Quayside workshop."),
                     (2, 2, "Tamsin", "Tamsin", "start at", "the Harbour library", "I started at the Harbour library."))
    assert _changed(units, None) == [("n/u1", "n/u2")]
    past, _ = _chat((1, 1, "Tamsin", "Tamsin", "fix", "bicycles", "I fixed bicycles at the Quayside workshop once."),
                    (2, 2, "Tamsin", "Tamsin", "start at", "the Harbour library", "I started at the Harbour library."))
    assert _changed(past, None) == []  # a past deed at a place is no job held


def test_a_phrasal_end_ends_the_state_its_object_names_and_a_bare_loss_does_not() -> None:
    swim = (1, 1, "Tamsin", "Tamsin", "be in", "the Lowfield sea swimmers", "I'm in the Lowfield sea swimmers.")
    units, _ = _chat(swim, (2, 2, "Tamsin", "Tamsin", "give up", "the Lowfield sea swimmers",
                            "I gave up the Lowfield sea swimmers."))
    assert _changed(units, None) == [("n/u1", "n/u2")]
    units, _ = _chat(swim, (2, 2, "Tamsin", "Tamsin", "lose", "my Lowfield sea swimmers cap",
                            "I lost my Lowfield sea swimmers cap."))
    assert _changed(units, None) == []


def test_a_habit_at_a_named_firm_is_a_job_even_where_its_verb_ends_an_ownership() -> None:
    """"I sell used cars at X" tells where the speaker works, not a car sold; a new job told the same way in a
    later session ("I process loan forms for Y") then replaces it, with no word in common."""
    units, texts = _chat((1, 1, "Tamsin", "Tamsin", "sell", "used cars",
                          "Busy as ever. I still sell used cars at Harrowgate Motors on the bypass."), SMALL_TALK,
                         (3, 2, "Tamsin", "Tamsin", "process", "loan forms for the Kestrel Building Society",
                          "All change. I process loan forms for the Kestrel Building Society these days."))
    assert _changed(units, texts) == [("n/u1", "n/u3")]



def test_a_for_in_an_earlier_clause_is_no_duration() -> None:
    units, texts = _chat(OLD_JOB, SMALL_TALK, (3, 2, "Tamsin", "Tamsin", "be", "x",
                                               "The owner left for another town, so I run the cycle workshop at "
                                               "Quayside now."))
    assert _changed(units, texts) == [("n/u1", "n/u3")]


def test_a_report_of_what_the_speaker_heard_is_about_the_one_spoken_to() -> None:
    units, texts = _chat(OLD_JOB, SMALL_TALK, (3, 2, "Tamsin", "Tamsin", "have", "a long week", "I had a long week."),
                         (4, 2, "Oren", "Oren", "hear", "x",
                          "I hear you've taken over the cycle workshop at Quayside now! Congratulations."))
    assert _changed(units, texts) == [("n/u1", "n/u4")]


def test_an_answer_holds_the_words_of_the_question_it_answers() -> None:
    asked = (1, 1, "Oren", "Oren", "say", "x", "Still singing with the Harbour Voices choir?")
    answer = (2, 1, "Tamsin", "Tamsin", "say", "x", "Yes, most weeks, I love it.")
    moved = (3, 2, "Tamsin", "Tamsin", "be", "free on Tuesdays",
             "The Harbour Voices moved rehearsals to Thursdays, so I'm free on Tuesdays now.")
    units, texts = _chat(asked, answer, moved)
    assert _changed(units, texts) == [("n/u2", "n/u3")]  # the answer is the state, not the question
    told = (1, 1, "Oren", "Oren", "say", "x", "The Harbour Voices choir sounds lovely, is it hard to join?")
    units, texts = _chat(told, answer, moved)  # a question that opens with what the asker tells is no question
    assert _changed(units, texts) == []


def test_a_statement_no_unit_claims_names_the_turns_state_by_two_rare_words() -> None:
    old = (1, 1, "Tamsin", "Tamsin", "get", "a show at the Anchor",
           "Still on drums with the Copperline Quartet. We've got a show at the Anchor on Friday.")
    ended = (3, 2, "Tamsin", "Copperline Quartet", "split up", "in June", "The Copperline Quartet split up in June.")
    units, texts = _chat(old, SMALL_TALK, ended)
    assert _changed(units, texts) == [("n/u1", "n/u3")]
    one_word = (3, 2, "Tamsin", "quartet", "split up", "in June", "Our quartet split up in June.")
    units, texts = _chat(old, SMALL_TALK, one_word)  # one shared word of an unclaimed sentence is not enough
    assert _changed(units, texts) == []


def test_a_state_begun_at_a_date_is_a_change_and_one_since_an_event_is_not() -> None:
    shift = (1, 1, "Tamsin", "Tamsin", "do", "the late shift",
             "I do the late shift at the cycle workshop, two till ten.")
    began = (3, 2, "Tamsin", "Tamsin", "say", "x", "Earlies at the cycle workshop since March, six till two.")
    assert _changed(*_chat(shift, SMALL_TALK, began)) == [("n/u1", "n/u3")]
    for moved in ("The cycle workshop put me on earlies, six till two.", "I've gone over to earlies, six till two.",
                  "I'm on earlies since the new year, six till two.", "From August I'm on earlies, six till two."):
        units, texts = _chat(shift, SMALL_TALK, (3, 2, "Tamsin", "Tamsin", "say", "x", moved))  # a rota moved
        assert _changed(units, texts) == [("n/u1", "n/u3")], moved
    for said in ("I've loved the cycle workshop since I was a kid.",
                 "The cycle workshop has been busy since we last talked."):
        units, texts = _chat(shift, SMALL_TALK, (3, 2, "Tamsin", "Tamsin", "say", "x", said))
        assert turn_links(units, texts, set()) == {}, said


def test_a_change_of_a_state_told_again_with_still_supersedes_its_first_telling_too() -> None:
    first = (1, 1, "Ikaika", "Ikaika", "be", "above Pennock's bakery",
             "Yes, Leilani and I are above Pennock's bakery on Drury Row, and it smells of bread all night.")
    again = (3, 2, "Ikaika", "Ikaika", "be", "above the bakery", "We're still above the bakery, before you ask.")
    moved = (5, 3, "Ikaika", "Ikaika", "move", "to a cottage in Hallowmere",
             "We moved to a cottage in Hallowmere after the bakery closed.")
    assert _changed(*_chat(first, SMALL_TALK, again, moved)) == [("n/u1", "n/u5"), ("n/u3", "n/u5")]
    # told again without "still", the later telling is only the state the move changes
    plain = (3, 2, "Ikaika", "Ikaika", "be", "above the bakery", "We're above the bakery, before you ask.")
    assert ("n/u1", "n/u5") not in _changed(*_chat(first, SMALL_TALK, plain, moved))


def test_a_named_third_persons_state_told_by_either_speaker_is_changed_by_the_other() -> None:
    old = (1, 1, "Oren", "Marisol", "wash", "dishes at the Copper Kettle",
           "Last week. She's still washing dishes at the Copper Kettle while she finishes college.")
    new = (3, 2, "Tamsin", "Marisol", "be", "so proud",
           "She's so proud. She runs the kitchen at the Copper Kettle now.")
    assert _links(old, SMALL_TALK, new) == {2: (0, "change")}
    mine = (3, 2, "Tamsin", "Tamsin", "be", "so proud", "I'm so proud. I run the kitchen at the Copper Kettle now.")
    assert _links(old, SMALL_TALK, mine) == {}  # Tamsin's own state is not Marisol's


def test_a_state_told_again_in_a_sentence_no_unit_claims_notes_its_first_telling() -> None:
    first = (1, 1, "Ikaika", "Ikaika", "play", "fiddle with the Marlins",
             "I'm playing fiddle with the Marlins now, every Friday at the Crown.")
    again = (3, 2, "Ikaika", "owner", "pay", "us in cider",
             "Still with the Marlins, still Fridays. The owner pays us in cider.")
    left = (5, 3, "Ikaika", "Ikaika", "agree", "on anything",
            "I walked out on the Marlins in December; the drummer and I couldn't agree on anything.")
    assert _links(first, SMALL_TALK, again, left) == {3: (2, "change"), 2: (0, "note")}


def test_a_change_told_in_times_alone_changes_the_schedule_the_person_told_last() -> None:
    stall = (1, 1, "Tamsin", "Tamsin", "open", "the stall",
             "Sorry. I only open the stall Monday to Friday, so I unload everything at once.")
    days = [(i, 1 + i // 5, "Oren", "Oren", "see", "you", f"See you on {d}.")  # a weekday in many turns: no
            for i, d in zip(range(2, 8), ("Monday", "Tuesday", "Wednesday", "Friday", "Saturday", "Sunday"))]  # link
    retimed = (9, 2, "Tamsin", "Tamsin", "be", "tired", "Tired. Thursdays and Fridays now.")  # by that word
    assert _links(stall, *days, retimed) == {7: (0, "change")}
    others = (1, 1, "Oren", "Oren", "open", "the stall", "I only open the stall Monday to Friday.")
    assert _links(others, *days, retimed) == {}  # Oren's schedule is not Tamsin's
    colon = (9, 2, "Tamsin", "Tamsin", "follow", "the new hall's days",  # the times close a clause
             "Thursdays and Fridays now: I follow the new hall's days.")
    assert _links(stall, *days, colon) == {7: (0, "change")}
    told = (9, 2, "Tamsin", "Tamsin", "follow", "the new hall's days",  # a clause of other words: no schedule
            "I follow the new hall's days now: the council sent the sellers there on Thursdays.")
    assert _links(stall, *days, told) == {}


def test_news_of_the_one_spoken_to_is_their_change_whoever_the_teller_heard_it_from() -> None:
    """Nobody tells a friend their own state unless it is new to the teller: "So you're ...!", "I hear you've ...",
    "X says you ..." need no "now"; the sentence saying where the news came from ("My cousin saw you.") is not a
    claim of the teller's."""
    old = (1, 1, "Tamsin", "Tamsin", "be", "the library assistant in Quayside",
           "Quiet. I'm the library assistant in Quayside, three days a week.")
    for news in ("So you're the new caretaker at Quayside Primary! My cousin says you fixed the boiler.",
                 "I hear you've left the library in Quayside for the school!",
                 "Your aunt told my mother you've left the library in Quayside."):
        units, texts = _chat(old, SMALL_TALK, (3, 2, "Oren", "Tamsin", "be", "x", news))
        assert _changed(units, texts) == [("n/u1", "n/u3")], news
    for praise in ("Congrats on the library in Quayside!", "I hear you, the library in Quayside is hard work.",
                   "Last August I told you about the library in Quayside.",
                   "So you're still at the library in Quayside? My cousin says it's closing."):
        units, texts = _chat(old, SMALL_TALK, (3, 2, "Oren", "Tamsin", "be", "x", praise))
        assert _changed(units, texts) == [], praise


def test_news_of_the_one_spoken_to_names_its_state_by_one_rare_word() -> None:
    old = (1, 1, "Tamsin", "Tamsin", "be", "an officer on C wing",
           "Weekend shift at the prison. I've been an officer on C wing for nine years.")
    news = (3, 2, "Oren", "Tamsin", "hand in", "your keys", "So you've handed in your keys at the prison!")
    assert _changed(*_chat(old, SMALL_TALK, news)) == [("n/u1", "n/u3")]
    own = (3, 2, "Tamsin", "Tamsin", "hand in", "my keys", "I've handed in my keys at the prison.")
    assert _changed(*_chat(old, SMALL_TALK, own)) == []  # told by its owner, one word of a sentence no unit claims


def test_a_role_holder_who_left_or_retired_changes_the_state_that_names_them() -> None:
    """"left" is read as "leave" (not after a determiner: "on the left"), "retirement" as an end of a job."""
    gp = (1, 1, "Tamsin", "Tamsin", "be", "Dr Haddrell at the Quayside surgery",
          "Better. My GP is Dr Haddrell at the Quayside surgery, and she sent me for physio.")
    left = (3, 2, "Tamsin", "Tamsin", "give", "a Dr Oakshott",
            "Dr Haddrell's left the Quayside surgery, so I've been given a Dr Oakshott.")
    assert _changed(*_chat(gp, SMALL_TALK, left)) == [("n/u1", "n/u3")]
    seated = (3, 2, "Tamsin", "Tamsin", "sit", "on the left", "Dr Haddrell sat on the left at the Quayside surgery.")
    assert _changed(*_chat(gp, SMALL_TALK, seated)) == []
    boss = (1, 1, "Tamsin", "Tamsin", "be on", "the forklift in Bay 3",
            "I'm still on the forklift in Bay 3, and still under Gorringe.")
    retired = (3, 2, "Tamsin", "Gorringe", "take", "early retirement", "Gorringe took early retirement at Easter.")
    assert _changed(*_chat(boss, SMALL_TALK, retired)) == [("n/u1", "n/u3")]


def test_a_name_in_a_change_is_enough_to_name_the_state_it_changes() -> None:
    """One rare word of a sentence no unit claims names a state only with another; a name is enough alone."""
    teacher = (1, 1, "Zofia", "Zofia's daughter", "adore", "him",
               "Mr Berthold from the music school on the square. Strict, but she adores him.")
    retired = (3, 2, "Zofia", "Zofia's daughter", "be", "x",
               "She is, but with a young woman now. Mr Berthold retired in November.")
    assert _changed(*_chat(teacher, SMALL_TALK, retired)) == [("n/u1", "n/u3")]
    unnamed = (3, 2, "Zofia", "Zofia's daughter", "be", "x", "She is, but with a young woman now. Music retired her.")
    assert _changed(*_chat(teacher, SMALL_TALK, unnamed)) == []


def test_a_question_that_kept_no_unit_gives_its_answer_its_words_when_its_speaker_is_known() -> None:
    asked = "Did the Tregears' pony get out again?"  # a question: the extractor keeps no unit of it
    answer = (2, 1, "Delyth", "Mrs Tregear", "have", "him", "Twice. She's had him in the paddock behind us for years.")
    moved = (4, 2, "Delyth", "pony", "live at", "a sanctuary", "The pony lives at a sanctuary up at Crowcombe now.")
    units, texts = _chat(answer, SMALL_TALK, moved)
    texts = {"D1:1": asked, **texts}  # in dialogue order
    speakers = {"D1:1": "Eirwyn", **{u.first_turn: u.speaker for u in units}}
    assert turn_links(units, texts, {}, speakers=speakers) == {2: (0, "change")}
    assert turn_links(units, texts, {}) == {}  # whose question it was is unknown: no answer, no shared word
    speakers["D1:1"] = "Delyth"  # a question of the answer's own speaker is answered by nobody
    assert turn_links(units, texts, {}, speakers=speakers) == {}


def test_by_now_or_a_plan_now_tells_no_change_a_trip_now_does() -> None:
    assert not tells_change("Maren must be packing by now.", "Teodor", StateTable.default())
    assert tells_change("Maren works at the bakery on Quay Street now.", "Teodor", StateTable.default())
    assert tells_change("I'm going to Vardø in August now, not June.", "Teodor", StateTable.default())  # a trip
    assert not tells_change("We're going to try the other road now.", "Teodor", StateTable.default())  # a plan
    assert not tells_change("I still go out on Sundays; these days I can gut a fish in a minute.", "Teodor",
                            StateTable.default())  # a skill that grew
    assert tells_change("These days I drive the school bus.", "Teodor", StateTable.default())
    assert tells_change("I'm doing Wednesday evenings for the food bank now.", "Teodor", StateTable.default())
    assert not tells_change("It's quiet for us now.", "Teodor", StateTable.default())  # for the time being


def test_a_class_put_on_another_weekday_changes_its_schedule() -> None:
    old = (1, 1, "Tamsin", "Tamsin", "have", "my pottery class",
           "I'll fit it around my pottery class, which is on Thursday evenings.")
    put = (3, 2, "Tamsin", "Thursdays", "be", "empty", "The art centre put my pottery class on Tuesdays, so Thursdays are empty.")
    assert _changed(*_chat(old, SMALL_TALK, put)) == [("n/u1", "n/u3")]
    show = (3, 2, "Tamsin", "Tamsin", "put on", "a show", "We put on a show at the pottery class on Tuesday.")
    assert _changed(*_chat(old, SMALL_TALK, show)) == []


def test_an_irregular_past_of_a_phrasal_end_tells_a_change() -> None:
    table = StateTable.default()
    assert tells_change("Dad's finally given up the farmhouse, by the way.", "Oren", table)  # give up
    assert not tells_change("He broke his arm on the ice.", "Oren", table)  # no particle: no end
    assert not tells_change("It's the house on the left, by the way.", "Oren", table)  # a noun, not "leave"


def test_being_off_a_state_tells_a_change_and_an_idiom_does_not() -> None:
    table = StateTable.default()
    assert tells_change("I'm off the trucks. I teach in the simulator room.", "Oren", table)
    assert not tells_change("Phew, I'm off the hook for the party.", "Oren", table)


def test_a_turn_telling_an_ending_and_a_beginning_changes_the_state_its_ending_names() -> None:
    """"I wouldn't know the workshop's hours any more. I've been painting hulls at the marina since May.": the
    beginning shares a rarer word with a plan told in between (the marina), the ending with the old job."""
    plan = (3, 2, "Tamsin", "Tamsin", "apply for", "a job at the Westgate marina",
            "I've applied for a job at the Westgate marina, painting hulls.")
    new = (4, 3, "Tamsin", "Tamsin", "paint", "hulls",
           "I wouldn't know the cycle workshop's hours any more. I've been painting hulls at the Westgate marina "
           "since May.")
    assert _links(OLD_JOB, SMALL_TALK, plan, new) == {3: (0, "change")}  # not (2, "change"): the marina plan


def test_shared_words_weighing_the_same_link_a_claim_about_the_person_over_one_about_the_thing() -> None:
    trip = (1, 1, "Win", "Win", "fly up to", "Toronto", "I'm flying up to Toronto in June to see my sister.")
    shop = (2, 1, "Pau", "Pau", "run", "a patty shop", "I run a patty shop in Mandeville.")
    remark = (3, 1, "Win", "Toronto", "be", "colder than a freezer",
              "My sister says Toronto is colder than a freezer in June.")
    off = (4, 2, "Win", "Win", "not go to", "Toronto",
           "I'm not going to Toronto after all. My sister is coming down here in August instead.")
    assert _links(trip, shop, remark, off) == {3: (0, "change")}
    assert _links(shop, remark, off) == {2: (1, "change")}  # no claim about him: the remark is what there is


def test_news_told_with_its_source_in_one_sentence_is_the_one_spoken_to_s() -> None:
    """"My cousin on the boat tells me you live in Sibu now": the teller's "my" and "me" belong to the source."""
    home = (1, 1, "Jugah", "Jugah", "live in", "my grandmother's longhouse above Kapit",
            "I live in my grandmother's longhouse above Kapit, by the river.")
    ticket = (2, 1, "Inda", "Inda", "sell", "tickets for the express boat",
              "I sell tickets for the express boat at the wharf.")
    news = (3, 2, "Inda", "Jugah", "live in", "Sibu",
            "My cousin on the express boat tells me you live in Sibu now, in a flat near the market.")
    assert _links(home, ticket, news) == {2: (0, "change")}


def test_a_turn_telling_a_change_of_the_state_a_remark_names_makes_it_a_change() -> None:
    """The claim alone reads as a remark on the class ("I dance salsa now"); the turn's words tell its new night."""
    units, texts = _chat((1, 1, "user", "user", "go to", "a salsa class on Thursday evenings",
                          "I go to a salsa class on Thursday evenings, so I need quick meals on Thursdays."),
                         (2, 1, "assistant", "assistant", "say", "cook extra", "Cook extra the night before."),
                         (3, 2, "user", "user", "dance", "salsa",
                          "I dance salsa on Tuesdays now; the studio swapped our night with a yoga group in March."))
    assert _changed(units, texts) == [("n/u1", "n/u3")]


def test_a_question_that_names_the_askers_own_thing_tells_it() -> None:
    """"Any tips for my chess club? We meet ..." tells a chess club of the asker's: leaving it later links there."""
    asked = (1, 1, "user", "user", "meet in", "the library",
             "Any openings to suggest for my chess club? I'm the weakest. We meet in the library on Thursdays.")
    other = (2, 1, "user", "user", "want", "a new kettle", "I also want a new kettle. Which one?")
    left = (3, 2, "user", "user", "be", "free in the evenings",  # the extractor keeps the first claim only
            "I'm free in the evenings too; I left the chess club in March.")
    assert _changed(*_chat(asked, other, left)) == [("n/u1", "n/u3")]
