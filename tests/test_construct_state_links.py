"""Traces from the claims' structure (construct/state_cues.py, construct/state_links.py): cues of the sentence
and links across subjects and classes, each rule alone, and the cases where no state changed.

Units are written by hand as the rule extractor makes them (subject, relation, object and the sentence as
the claim text), so each test names the structure it relies on; the extractor's side (a reported clause)
is tested on a real parse at the end.
"""

from __future__ import annotations

import random

from qgmem.construct.state_cues import read_cues, thing_words
from qgmem.construct.state_table import StateTable
from qgmem.construct.traces import TraceConfig, build_traces, refine
from qgmem.types import AtomicUnit


def _u(i: int, speaker: str, said: str, subject: str, relation: str, obj: str, text: str,
       fact: str | None = None, turn: str | None = None) -> AtomicUnit:
    return AtomicUnit(id=f"n/u{i}", namespace="n", session_id="S1", text=f"{speaker}: {text}",
                      first_turn=turn or f"D1:{i}", last_turn=turn or f"D1:{i}", turn_ids=[turn or f"D1:{i}"],
                      speaker=speaker, subject=subject, relation=relation, object=obj, fact_time_start=fact,
                      fact_time_end=fact, utterance_time=said)


def _changed(units: list[AtomicUnit]) -> list[tuple[str, str]]:
    """(superseded unit, the update after it in its trace) pairs, by unit id."""
    new, traces = build_traces(units, TraceConfig())
    by = {u.id: u for u in new}
    out = []
    for t in traces:
        for k, (uid, role) in enumerate(zip(t.unit_ids, t.roles)):
            if role == "update":
                out += [(e, uid) for e in t.unit_ids[:k] if by[e].superseded]
    return sorted(out)


def test_a_change_verb_links_the_thing_it_acts_on_across_subjects() -> None:
    units = [_u(0, "Fia", "2023-01-07", "Fia", "sign up for", "a life drawing class at the arts centre",
                "I signed up for a life drawing class at the arts centre. It's on Tuesday evenings."),
             _u(1, "Rado", "2023-01-07", "Rado", "be", "jealous", "I'm jealous!"),
             _u(2, "Fia", "2023-03-18", "centre", "move", "the class",
                "The centre moved the class to Thursdays, so it clashes with my choir.")]
    assert _changed(units) == [("n/u0", "n/u2")]
    # without a time the same verb moves nothing ("moved the sofa"), and another thing is no link
    assert _changed([units[0], _u(2, "Fia", "2023-03-18", "centre", "move", "the class", "They moved the class.")]) == []
    assert _changed([units[0], _u(2, "Fia", "2023-03-18", "centre", "move", "the concert",
                                  "They moved the concert to Friday.")]) == []


def test_a_change_prefers_the_state_of_its_own_speaker_over_a_reply_that_repeats_the_thing() -> None:
    units = [_u(0, "Gid", "2023-02-25", "Gid", "plan", "to visit my grandparents in Porto in June",
                "We're planning to visit my grandparents in Porto in June."),
             _u(1, "Sab", "2023-02-25", "Porto", "sound", "perfect", "Porto in June sounds perfect.",
                fact="2022-06-01"),
             _u(2, "Gid", "2023-05-06", "Gid", "push", "the Porto visit",
                "We've pushed the Porto visit back to September.", fact="2022-09-01")]
    assert _changed(units) == [("n/u0", "n/u2")]  # its fact time (read as last year) does not put it first


def test_a_relatives_claim_is_not_the_speakers_state() -> None:
    """"Valji's brother joined the troupe" is the brother's state: "I quit the troupe" ends Valji's own."""
    own = _u(0, "Valji", "2023-01-07", "Valji", "play with", "a folk troupe in Bhuj",
             "I play the drum with a folk troupe in Bhuj.")
    brother = _u(1, "Valji", "2023-01-07", "Valji's brother", "join", "the troupe", "My brother joined the troupe too.")
    quit_ = _u(2, "Valji", "2023-05-06", "Valji", "quit", "the troupe", "I quit the troupe in April.")
    assert ("n/u1", "n/u2") not in _changed([own, brother, quit_])


def test_a_move_to_a_place_is_no_retiming() -> None:
    c = read_cues("Ana: She moved to Singapore in November for a job.", "Ana", "move to", "Singapore")
    assert not c.change
    assert read_cues("Ana: It moved to the second Thursday of the month.", "Ana", "move to",
                     "the second Thursday of the month").change
    assert read_cues("Ana: Spanish moved to Wednesdays.", "Ana", "move", "").change
    units = [_u(0, "Cos", "2023-01-01", "Ananya", "come to", "my picnic", "Ananya is coming to my picnic."),
             _u(1, "Cos", "2023-03-01", "Ananya", "move to", "Singapore", "She moved to Singapore in November.")]
    assert _changed(units) == []


def test_a_departure_of_a_role_holder_ends_the_role_and_so_does_a_clause_that_tells_it() -> None:
    units = [_u(0, "Eero", "2022-09-10", "Aapo's teacher", "be", "Mrs. Albright", "His teacher is Mrs. Albright."),
             _u(1, "Eero", "2023-01-14", "Mrs. Albright", "move away", "",
                "Mrs. Albright moved away over Christmas, so Mr. Castellanos took over her class.")]
    assert _changed(units) == [("n/u0", "n/u1")]
    told = [units[0], _u(1, "Eero", "2023-01-14", "Eero", "see", "Mr. Castellanos",
                         "Mrs. Albright retired, so we see Mr. Castellanos now.")]
    assert _changed(told) == [("n/u0", "n/u1")]
    # someone who only shares a name with a role's value, leaving something else, changes no role of a person
    other = [_u(0, "Ana", "2023-01-01", "Ana", "date", "Sarah", "I'm dating Sarah."),
             _u(1, "Ana", "2023-02-01", "Sarah", "quit", "her job", "Sarah quit her job.")]
    assert _changed(other) == []


def test_a_new_holder_told_by_the_counterpart_replaces_the_role() -> None:
    units = [_u(0, "user", "2023-01-28", "user's therapist", "be", "Dr. Hemsworth", "My therapist is Dr. Hemsworth."),
             _u(1, "user", "2023-04-15", "user", "see", "a new therapist", "I see a new therapist now, Dr. Abe.")]
    assert _changed(units) == [("n/u0", "n/u1")]


def test_speakers_written_in_lower_case_are_named_subjects() -> None:
    units = [_u(0, "user", "2023-01-10", "user", "live in", "a tiny studio in Walthamstow", "I live in Walthamstow."),
             _u(1, "user", "2023-04-02", "user", "move to", "a flat in Leyton", "I'm moving to a flat in Leyton.")]
    assert _changed(units) == [("n/u0", "n/u1")]


def test_a_role_at_an_organisation_is_an_employment_and_an_end_borrows_it() -> None:
    table = StateTable.default()
    u = _u(0, "Pet", "2022-09-17", "Pet", "be", "a line cook at Saffron Row", "I'm a line cook at Saffron Row.")
    c = read_cues(u.text, u.speaker, u.relation, u.object)
    assert c.role_at and refine(table.read(u.relation, u.object, u.subject), u, c, frozenset(), table).cls == "employment"
    assert not read_cues("Ana: I'm a guest at a wedding.", "Ana", "be", "a guest at a wedding").role_at
    assert read_cues("Cy: I started as content lead at Tessellate.", "Cy", "start as", "content lead at Tessellate").role_at
    quit = _u(1, "Pet", "2023-02-25", "Pet", "leave", "Saffron Row", "I left Saffron Row in January.")
    assert _changed([u, quit]) == [("n/u0", "n/u1")]


def test_an_end_links_an_earlier_claim_without_a_class_that_names_the_thing() -> None:
    units = [_u(0, "Joa", "2023-03-11", "Joa", "drive", "a battered old Fiat Panda", "I drive a battered old Fiat Panda."),
             _u(1, "Joa", "2023-06-24", "Joa", "sell", "the Fiat", "I sold the Fiat in May.")]
    assert _changed(units) == [("n/u0", "n/u1")]
    given = [_u(0, "Wil", "2023-01-14", "Wil", "have", "my two goldfish", "I still have my two goldfish."),
             _u(1, "Wil", "2023-04-29", "Wil", "give", "my goldfish", "I gave my goldfish to my nephew.")]
    assert _changed(given) == [("n/u0", "n/u1")]
    assert not read_cues("Ana: Our friends give us strength to go on.", "Ana", "give", "us strength").transfer


def test_an_end_links_the_state_of_having_the_thing_over_a_later_mention_of_it() -> None:
    had = _u(0, "Bev", "2023-03-11", "Bev", "get", "a houseboat moored on the Murray",
             "I've got a houseboat moored on the Murray.")
    mention = _u(1, "Bev", "2023-03-11", "Bev's mate", "want", "to come fishing off the houseboat",
                 "My mate wants to come fishing off the houseboat.")
    sold = _u(2, "Bev", "2023-08-19", "Bev", "sell", "the houseboat", "Sold the houseboat in July.")
    assert _changed([had, mention, sold]) == [("n/u0", "n/u2")]
    assert _changed([mention, sold]) == [("n/u1", "n/u2")]  # with no state told, the mention is what there is


def test_no_longer_ends_the_relations_own_state() -> None:
    table = StateTable.default()
    u = _u(1, "Nils", "2023-07-08", "Nils", "work at", "the library", "I no longer work at the library.")
    c = read_cues(u.text, u.speaker, u.relation, u.object)
    assert c.ends and refine(table.read(u.relation, u.object, u.subject), u, c, frozenset(), table).kind == "end"


def test_a_recurring_time_is_a_schedule_compared_by_its_times() -> None:
    units = [_u(0, "Del", "2023-02-02", "Del", "be", "", "I'm on nights at the moment, ten till seven."),
             _u(1, "Del", "2023-05-13", "Del", "work", "day shifts", "I work day shifts now, seven till three.")]
    new, (t,) = build_traces(units, TraceConfig())
    assert t.relation == "schedule" and t.roles == ["origin", "update"] and new[0].superseded
    c = read_cues("Ana: I go every Sunday morning.", "Ana", "go", "")
    assert c.recurring and {"sunday", "morning"} <= c.times
    assert not read_cues("Ana: I went to the beach on Sunday.", "Ana", "go to", "the beach").recurring


def test_a_marker_without_a_class_restates_a_value_it_shares_words_with() -> None:
    units = [_u(0, "Xio", "2022-03-19", "Xio", "work at", "the county museum", "I work at the county museum."),
             _u(1, "Xio", "2022-08-27", "Xio", "be", "the museum's head of collections",
                "I'm the museum's head of collections now.")]
    assert _changed(units) == [("n/u0", "n/u1")]
    # another verb that shares a word adds to the state: it joins the trace and replaces nothing
    adds = [units[0], _u(1, "Xio", "2022-08-27", "Xio", "run", "the museum's new wing", "I run the museum's new wing now.")]
    new, traces = build_traces(adds, TraceConfig())
    assert _changed(adds) == [] and [u.trace_role for u in new] == ["origin", "supplement"]


def test_markers_and_things() -> None:
    c = read_cues("Ana: We're going to Sicily in October instead.", "Ana", "go to", "Sicily")
    assert c.replaces and not c.now
    assert read_cues("Ana: I have a new job.", "Ana", "have", "a new job").now
    assert not read_cues("Ana: I live in New York.", "Ana", "live in", "New York").now
    assert thing_words("Liv's ballet class") == {"ballet", "class"}  # whose it is, not which
    assert thing_words("Biscuit's gone to my cousin's farm") == {"biscuit", "gone", "farm"}  # "'s" = "has"
    assert read_cues("Ana: Mr. Hollis retired in May.", "Ana", "retire", "").departure


def test_linked_traces_do_not_depend_on_the_order_units_are_listed_in() -> None:
    units = [_u(0, "Fia", "2023-01-07", "Fia", "sign up for", "a drawing class", "I signed up for a drawing class."),
             _u(1, "Fia", "2023-03-18", "centre", "move", "the class", "The centre moved the class to Thursdays."),
             _u(2, "Eero", "2022-09-10", "Aapo's teacher", "be", "Mrs. Albright", "His teacher is Mrs. Albright."),
             _u(3, "Eero", "2023-01-14", "Mrs. Albright", "retire", "", "Mrs. Albright retired in December."),
             _u(4, "Joa", "2023-03-11", "Joa", "drive", "an old Fiat", "I drive an old Fiat."),
             _u(5, "Joa", "2023-06-24", "Joa", "sell", "the Fiat", "I sold the Fiat.")]
    _, ref = build_traces(units, TraceConfig())
    assert len(ref) == 3
    for seed in range(5):
        _, got = build_traces(random.Random(seed).sample(units, len(units)), TraceConfig())
        assert got == ref


def test_a_chat_without_a_change_forms_no_update() -> None:
    units = [_u(0, "Yol", "2023-01-14", "Yol", "work at", "the Fairholme Observatory", "I work at the Fairholme Observatory."),
             _u(1, "Zeb", "2023-01-14", "Zeb", "join", "a sculpture club", "I joined a sculpture club in town."),
             _u(2, "Yol", "2023-04-22", "Yol", "be at", "Fairholme", "Yes, I'm still at Fairholme, I love it."),
             _u(3, "Zeb", "2023-04-22", "Zeb", "join", "a second club, a drawing group", "I joined a second club now."),
             _u(4, "Zeb", "2023-04-22", "sculpture club", "meet on", "Tuesdays", "The sculpture club meets on Tuesdays.")]
    assert _changed(units) == []


def test_the_rule_extractor_reads_a_reported_clause() -> None:
    from qgmem.construct.rule import RuleExtractor
    from qgmem.construct.windows import Window
    from qgmem.types import Turn

    def one(text: str, speaker: str) -> AtomicUnit:
        new = Turn("D1:1", speaker, text)
        (u,) = RuleExtractor().extract(Window("S1", 0, [new], [], [new], session_date="2023-04-22"), "c", ["Thea", "Umb"])
        return u

    u = one("Your sister told me you live in York now.", "Thea")
    assert (u.subject, u.relation, u.object) == ("Umb", "live in", "York")
    u = one("I heard you left Ravensholme and you're teaching at the college now!", "Umb")
    assert (u.subject, u.relation) == ("Thea", "leave")


def test_losses_gifts_received_and_a_new_thing_inside_a_phrase_change_nothing() -> None:
    units = [_u(0, "Eve", "2023-01-01", "Eve", "buy", "a console for my partner", "I bought a console for my partner."),
             _u(1, "Eve", "2023-02-01", "Eve", "be given", "a new game for the console",
                "We were given a new game for the console last week."),
             _u(2, "Eve", "2023-02-01", "Eve's friend", "give", "me this bouquet", "My friend gave me this bouquet."),
             _u(3, "Eve", "2023-03-01", "Eve", "lose", "a friend", "I lost a friend last week."),
             _u(4, "Eve", "2023-03-01", "Eve", "plan", "to go together someday", "We should plan to go together someday."),
             _u(5, "Eve", "2023-04-01", "Eve", "get", "ta stick together, especially now", "We gotta stick together, especially now."),
             _u(6, "Eve", "2023-04-01", "Eve", "donate", "a portion of my profits", "I donate a portion of my profits to a cause.")]
    assert _changed(units) == []
    # a job lost is an end of its own class
    job = [_u(0, "Jo", "2023-01-01", "Jo", "work at", "the engineering company", "I work at the engineering company."),
           _u(1, "Jo", "2023-05-01", "Jo", "lose", "my job at the engineering company", "I lost my job at the company.")]
    assert _changed(job) == [("n/u0", "n/u1")]


def test_a_pronoun_object_of_an_end_or_a_retiming_stands_for_the_latest_thing_the_verb_can_act_on() -> None:
    had = _u(0, "Ivo", "2023-03-04", "Ivo", "have", "the Vespa serviced", "I've had the Vespa serviced.")
    club = _u(1, "Ivo", "2023-03-04", "Ivo", "join", "a chess club", "I joined a chess club.")
    sold = _u(2, "Ivo", "2023-08-19", "Ivo", "sell", "it", "I sold it in July.")
    assert _changed([had, club, sold]) == [("n/u0", "n/u2")]  # sold: a thing he had, not the club he joined
    given = _u(2, "Ivo", "2023-08-19", "Ivo", "give", "it", "I gave it to my cousin.")
    assert _changed([had, club, given]) == [("n/u0", "n/u2")]
    assert _changed([club, sold]) == []  # nothing had: no guess
    party = _u(0, "Uma", "2023-05-06", "Uma", "have", "the housewarming", "I'm having the housewarming on Saturday, June 17.")
    rows = _u(1, "Uma", "2023-05-06", "Uma", "row with", "the canal club", "I row with the canal club on Tuesday evenings.")
    moved = _u(2, "Uma", "2023-05-20", "Uma", "bring", "it", "I brought it forward to June 3, my flatmate is away.")
    assert _changed([party, rows, moved]) == [("n/u0", "n/u2")]  # a move to a date moves the plan, not the schedule
    called = _u(2, "Uma", "2023-05-20", "Uma", "cancel", "it", "We cancelled it, the flat flooded.")
    assert ("n/u0", "n/u2") in _changed([party, called])
    # its sentence may name the thing: that one, though another thing was had since
    piano = _u(0, "Ivo", "2023-03-04", "Ivo", "have", "an old Bechstein upright", "We have an old Bechstein upright.")
    named = _u(2, "Ivo", "2023-08-19", "Ivo", "give", "it", "The Bechstein's gone; we gave it to the school.")
    vespa = _u(1, "Ivo", "2023-03-04", "Ivo", "have", "the Vespa serviced", "I've had the Vespa serviced.")
    assert _changed([piano, vespa, named]) == [("n/u0", "n/u2")]
    assert _changed([piano, vespa, given]) == [("n/u1", "n/u2")]  # named by nothing: the latest
    # a pronoun object that no end or retiming acts on links nothing
    assert _changed([party, _u(2, "Uma", "2023-05-20", "Uma", "enjoy", "it", "I enjoyed it.")]) == []


def test_a_habit_for_a_named_organisation_is_a_job_even_where_its_verb_tells_a_thing_owned() -> None:
    van = _u(0, "Odo", "2023-02-11", "Odo", "drive", "a van for Quickparcel", "I drive a van for Quickparcel.")
    school = _u(1, "Odo", "2023-09-30", "Odo", "teach at", "the Mirefield flight school",
                "I've been teaching at the Mirefield flight school since August.")
    assert _changed([van, school]) == [("n/u0", "n/u1")]
    car = _u(0, "Odo", "2023-02-11", "Odo", "drive", "a battered old Fiat", "I drive a battered old Fiat.")
    assert _changed([car, school]) == []
