"""Traces: grouping by (subject, state class) from the word table, memory-time order, update vs supplement."""

from __future__ import annotations

import random

import pytest

from qgmem.construct.state_table import StateTable, overlap
from qgmem.construct.traces import TraceConfig, build_traces, group_traces, memory_time
from qgmem.types import AtomicUnit


def _u(i: int, subject: str, relation: str, obj: str, fact: str | None = None, said: str = "2023-01-01") -> AtomicUnit:
    return AtomicUnit(id=f"n/u{i}", namespace="n", session_id="S1", text=f"{subject} {relation} {obj}",
                      first_turn=f"D1:{i}", last_turn=f"D1:{i}", turn_ids=[f"D1:{i}"], speaker=subject,
                      subject=subject, relation=relation, object=obj, fact_time_start=fact, fact_time_end=fact,
                      utterance_time=said)


def _by_id(units: list[AtomicUnit]) -> dict[str, AtomicUnit]:
    return {u.id: u for u in units}


def test_job_change_is_one_employment_trace_with_the_old_job_superseded() -> None:
    units = [
        _u(0, "Priya", "work at", "Brightwater Bakery", said="2023-05-20"),  # said later, listed first
        _u(1, "Priya", "work at", "Larkspur Books as a shift lead", said="2023-02-11"),
        _u(2, "Priya", "quit", "Larkspur Books", fact="2023-04-01", said="2023-05-20"),
        _u(3, "Tomasz", "work at", "the hospital pharmacy", said="2023-02-11"),
    ]
    new, traces = build_traces(units, TraceConfig())
    (t,) = traces
    assert t.relation == "employment" and t.subject == "Priya"
    assert t.unit_ids == ["n/u1", "n/u2", "n/u0"]  # memory-time order: the quit has a fact time in April
    assert t.roles == ["origin", "update", "update"] and t.latest_unit_id == "n/u0"
    by = _by_id(new)
    assert by["n/u1"].superseded and by["n/u2"].superseded and not by["n/u0"].superseded
    assert by["n/u3"].trace_id is None  # Tomasz's single job is no trace
    assert units[1].trace_id is None  # inputs are not mutated


def test_compatible_value_is_a_supplement_and_a_different_one_an_update() -> None:
    units = [_u(0, "Lucia", "live in", "Rotterdam", said="2022-09-03"),
             _u(1, "Lucia", "live in", "a tiny flat in Rotterdam near the harbour", said="2022-10-01"),
             _u(2, "Lucia", "move to", "Valencia", said="2023-03-18")]
    new, (t,) = build_traces(units, TraceConfig())
    assert t.relation == "residence" and t.roles == ["origin", "supplement", "update"]
    assert [u.superseded for u in new] == [True, True, False]


def test_object_head_word_decides_the_class() -> None:
    table = StateTable.default()
    assert table.read("work", "the morning shift at the hospital", "Amara").cls == "schedule"
    assert table.read("work at", "Larkspur Books as a shift lead", "Priya").cls == "employment"
    assert table.read("move", "the Iceland trip to September", "Yuki").cls == "plans"
    assert table.read("move", "the wedding", "Ignacio").cls == "plans"  # a noun in -ing is still a noun
    assert table.read("cancel", "my membership at the gym", "Mae").cls == "membership"
    r = table.read("get", "promoted to project architect", "Ottilie")
    assert (r.cls, r.kind) == ("employment", "change")  # a participle of the table carries its kind
    assert table.read("live", "near my gym", "Zoe").cls == "residence"  # a head word after "near" is no head
    assert table.read("have", "a budgie called Kiwi", "Yaro").cls == "ownership"
    assert table.read("buy", "a book", "Ana").cls == "ownership"  # "book" is a plan only as a verb
    light = table.read("be", "so happy today", "Ana")
    assert light.cls is None and light.light
    neg = table.read("not work at", "Acme", "Ana")
    assert (neg.cls, neg.kind) == ("employment", "end")
    role = table.read("be", "Dr. Pruitt", "Zainab's new doctor")
    assert role.cls == "relationship" and table.subject_key("Zainab's new doctor") == "zainab's doctor"


def test_object_words_leave_out_time_titles_and_class_names() -> None:
    table = StateTable.default()
    assert table.object_words("my job at Acme in March") == {"acm"}
    assert overlap(table.object_words("Dr. Hallett"), table.object_words("Dr. Pruitt")) == 0.0
    assert overlap(table.object_words("the Kyoto trip"), table.object_words("a trip to Kyoto in May")) == 1.0


def test_role_holder_replaced_and_quit_without_class_word_borrows_the_earlier_state() -> None:
    units = [_u(0, "Zainab's doctor", "be", "Dr. Hallett", said="2022-11-05"),
             _u(1, "Zainab's new doctor", "be", "Dr. Pruitt", said="2023-02-25"),
             _u(2, "Quentin", "play for", "the Harbour Hawks", said="2022-10-01"),
             _u(3, "Quentin", "leave", "the Harbour Hawks", fact="2022-12-01", said="2023-01-14")]
    new, traces = build_traces(units, TraceConfig())
    assert sorted((t.relation, tuple(t.roles)) for t in traces) == [
        ("membership", ("origin", "update")), ("relationship", ("origin", "update"))]
    assert [u.superseded for u in new] == [True, False, True, False]


def test_many_value_classes_keep_coexisting_values_until_one_ends() -> None:
    units = [_u(0, "Elspeth", "sing in", "the Meadowbank Community Choir", said="2023-03-04"),
             _u(1, "Elspeth", "join", "a chess club", said="2023-03-10"),
             _u(2, "Elspeth", "leave", "the Meadowbank choir", fact="2023-05-01", said="2023-06-10"),
             _u(3, "Elspeth", "join", "a jazz ensemble", said="2023-06-10")]
    new, (t,) = build_traces(units, TraceConfig())
    assert t.relation == "membership" and t.roles == ["origin", "supplement", "update", "supplement"]
    assert [u.superseded for u in new] == [True, False, False, False]  # the chess club was never left


def test_events_accumulate_but_a_negation_supersedes_what_it_names() -> None:
    units = [_u(0, "Mel", "paint", "a sunset over the lake", said="2023-01-01"),
             _u(1, "Mel", "paint", "the lake at dawn", said="2023-02-01"),
             _u(2, "Mel", "paint", "a portrait of her dog", said="2023-03-01"),  # shares no word: no trace
             _u(3, "Saoirse", "go to", "the Lanterns concert", said="2023-08-05"),
             _u(4, "Saoirse", "not go to", "the Lanterns concert", said="2023-09-02")]
    new, traces = build_traces(units, TraceConfig())
    by = {t.subject: t for t in traces}
    assert by["Mel"].unit_ids == ["n/u0", "n/u1"] and by["Mel"].roles == ["origin", "supplement"]
    assert by["Saoirse"].relation == "plans" and by["Saoirse"].roles == ["origin", "update"]
    assert [u.superseded for u in new] == [False, False, False, True, False]
    assert new[2].trace_id is None


def test_say_pronouns_and_light_verbs_join_no_trace() -> None:
    units = [_u(0, "Mel", "say", "hello"), _u(1, "Mel", "say", "hello again"), _u(2, "she", "work at", "Acme"),
             _u(3, "she", "work at", "Globex"), _u(4, "Mel", "be", "happy"), _u(5, "Mel", "be", "happy again"),
             _u(6, "working", "be", "fun"), _u(7, "working", "be", "fun too")]
    new, traces = build_traces(units, TraceConfig())
    assert traces == [] and all(u.trace_id is None for u in new)


def test_a_plan_counts_from_when_it_was_said() -> None:
    plan = _u(0, "Anneke", "plan", "a trip to Kyoto", fact="2023-05-01", said="2023-03-12")
    cancel = _u(1, "Anneke", "cancel", "the Kyoto trip", said="2023-04-23")
    assert memory_time(plan) == "2023-03-12" and memory_time(cancel) == "2023-04-23"
    new, (t,) = build_traces([cancel, plan], TraceConfig())
    assert t.unit_ids == ["n/u0", "n/u1"] and t.roles == ["origin", "update"] and t.latest_unit_id == "n/u1"


def test_traces_do_not_depend_on_the_order_units_are_listed_in() -> None:
    units = [_u(0, "Priya", "work at", "Larkspur Books", said="2023-01-01"),
             _u(1, "Priya", "quit", "Larkspur Books", said="2023-02-01"),
             _u(2, "Priya", "work at", "Brightwater Bakery", said="2023-03-01"),
             _u(3, "Kwame", "live in", "Leeds", said="2023-01-05"),
             _u(4, "Kwame", "move to", "York", said="2023-02-05"),
             _u(5, "Mel", "paint", "the lake", said="2023-01-02"),
             _u(6, "Mel", "paint", "the lake again", said="2023-01-09")]
    _, ref = build_traces(units, TraceConfig())
    for seed in range(5):
        shuffled = random.Random(seed).sample(units, len(units))
        _, got = build_traces(shuffled, TraceConfig())
        assert got == ref
    assert [t.id for t in ref] == ["n/t0", "n/t1", "n/t2"]


def test_roles_fn_decides_roles_and_large_groups_are_chunked() -> None:
    units = [_u(i, "Ana", "visit", f"place{i}", said=f"2023-01-{i + 1:02d}") for i in range(5)]
    seen: list[list[int]] = []

    def roles_fn(ti, members):
        seen.append(members)
        return ["origin"] + ["update"] * (len(members) - 1), set(members[:-1])

    new, traces = build_traces(units, TraceConfig(max_size=3), roles_fn)
    assert seen == [[0, 1, 2], [3, 4]]
    assert [t.roles for t in traces] == [["origin", "update", "update"], ["origin", "update"]]
    assert [u.superseded for u in new] == [True, True, False, True, False]
    assert group_traces(units, TraceConfig(min_size=6)) == []


def test_table_rejects_a_bad_row() -> None:
    with pytest.raises(ValueError, match="unknown class"):
        StateTable((("work", "jobs"),), (("employment", "single"),), frozenset())
    with pytest.raises(ValueError, match="single|many"):
        StateTable((), (("employment", "one"),), frozenset())


def test_particles_companions_and_nouns_that_only_look_like_states() -> None:
    table = StateTable.default()
    assert table.read("work on", "my business", "Jon").cls is None  # a project, not a job
    assert table.read("work", "on my business", "Jon").cls is None  # the particle left in the object
    assert table.read("keep", "up the great work", "Gina").cls is None  # "work" as a noun names no job
    assert table.read("start", "working at Acme", "Ana").cls == "employment"  # as a participle it does
    assert table.read("stay", "positive", "Jon").cls is None
    assert table.read("live", "my dream", "Jon").cls is None  # no preposition: no home
    assert table.read("live", "in Leeds", "Jon").cls == "residence"  # the preposition left in the object
    assert table.read("move in with", "his girlfriend in Hackney", "Dan").cls == "residence"
    assert table.read("work with", "the artist", "Gina").cls is None  # a collaboration, not a job
    assert table.read("break up with", "Tamsin", "Wendell's brother").kind == "end"
    assert table.read("be laid off", "", "Felix").kind == "end"


def test_a_remark_on_a_state_replaces_nothing() -> None:
    units = [_u(0, "Ana", "work at", "Acme", said="2023-01-01"),
             _u(1, "Ana", "hate", "my job", said="2023-02-01"),
             _u(2, "Ana", "get", "a new job", said="2023-03-01")]
    new, (t,) = build_traces(units, TraceConfig())
    assert t.roles == ["origin", "supplement", "update"]  # the new job names no value, yet it is a new job
    assert [u.superseded for u in new] == [True, True, False]


def test_the_latest_state_is_the_latest_value_not_a_later_remark() -> None:
    units = [_u(0, "Ana", "work at", "Acme", said="2023-01-01"),
             _u(1, "Ana", "work at", "Globex", said="2023-02-01"),
             _u(2, "Ana", "love", "my job", said="2023-03-01"),
             _u(3, "Ana", "work", "", said="2023-04-01")]  # "I'm working hard": no value
    new, (t,) = build_traces(units, TraceConfig())
    assert t.roles == ["origin", "update", "supplement", "supplement"]
    assert t.latest_unit_id == "n/u1" and [u.superseded for u in new] == [True, False, False, False]
    table = StateTable.default()
    assert table.read("think of", "working with some fashion bloggers", "Gina").kind == "note"
    assert table.read("offer", "one-on-one mentoring", "Jon").cls is None  # a noun of the table as a noun only


def test_rebuilding_traces_over_their_own_output_keeps_unchanged_units_and_clears_stale_fields() -> None:
    units = [_u(0, "Priya", "work at", "Larkspur Books", said="2023-02-11"),
             _u(1, "Priya", "work at", "Brightwater Bakery", said="2023-05-20"),
             _u(2, "Tomasz", "visit", "the museum", said="2023-02-11")]
    first, traces = build_traces(units, TraceConfig())
    again, traces_again = build_traces(first, TraceConfig())
    assert traces_again == traces and again == first
    assert all(a is f for a, f in zip(again, first))  # already right: returned as they are, not copied
    # a unit that lost its trace (its partner is gone) has its stale trace fields cleared
    alone, no_traces = build_traces(first[1:], TraceConfig())
    assert no_traces == [] and alone[0].trace_id is None and alone[0].trace_role is None
    assert not alone[0].superseded and first[1].trace_id is not None  # inputs are not mutated


def test_remembered_readings_equal_fresh_ones() -> None:
    table = StateTable.default()
    args = [("quit", "my job at Acme", "Ana"), ("be", "Dr. Pruitt", "Zainab's new doctor"), ("go", "camping", "Bo")]
    first = [(table.read(*a), table.object_words(a[1]), table.subject_key(a[2])) for a in args]
    for a, (reading, words, subject) in zip(args, first):  # asked again: from the memo, equal to a recomputation
        assert table.read(*a) is reading and reading == table._read(*a)
        assert table.object_words(a[1]) is words and words == table._object_words(a[1])
        assert table.subject_key(a[2]) == subject == table._subject_key(a[2])
    assert first[0][0].kind == "end" and first[1][0].cls == "relationship"


def test_a_dwelling_noun_heads_a_home_so_a_relatives_move_is_one_residence_trace() -> None:
    units = [_u(0, "Ilse's parents", "be in", "the farmhouse at Brackmoor", said="2023-02-11"),
             _u(1, "Ilse's parents", "be in", "a bungalow by the harbour", said="2023-06-03")]
    new, traces = build_traces(units, TraceConfig())
    (t,) = traces
    assert t.relation == "residence" and t.roles == ["origin", "update"]
    assert _by_id(new)["n/u0"].superseded
