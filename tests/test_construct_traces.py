"""Traces: grouping by subject + relation among fact-level neighbours, memory-time order, roles."""

from __future__ import annotations

import numpy as np

from qgmem.construct.traces import TraceConfig, build_traces, neighbour_pairs
from qgmem.types import AtomicUnit


def _u(i: int, subject: str, relation: str, obj: str, fact: str | None = None, said: str = "2023-01-01") -> AtomicUnit:
    return AtomicUnit(id=f"n/u{i}", namespace="n", session_id="S1", text=f"{subject} {relation} {obj}",
                      first_turn=f"D1:{i}", last_turn=f"D1:{i}", turn_ids=[f"D1:{i}"], speaker=subject,
                      subject=subject, relation=relation, object=obj, fact_time_start=fact, fact_time_end=fact,
                      utterance_time=said)


def _vec(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_state_change_is_update_and_supersedes_earlier() -> None:
    units = [
        _u(0, "Alice", "work", "Globex manager", said="2023-08-20"),  # said later, listed first
        _u(1, "Alice", "work", "Acme analyst", said="2023-05-08"),
        _u(2, "Alice", "work", "Acme analyst team lead", said="2023-06-01"),
        _u(3, "Bob", "read", "Dune", said="2023-05-08"),
    ]
    claim = np.stack([_vec(1, 0, 0), _vec(1, 0.1, 0), _vec(1, 0.05, 0), _vec(0, 0, 1)])
    rel = np.stack([_vec(1, 0), _vec(1, 0), _vec(1, 0), _vec(0, 1)])
    obj = np.stack([_vec(0, 1), _vec(1, 0), _vec(1, 0.2), _vec(1, 1)])
    new, traces = build_traces(units, claim, rel, obj, TraceConfig(neighbours=3))
    (t,) = traces
    assert t.unit_ids == ["n/u1", "n/u2", "n/u0"]  # memory-time order, not storage order
    assert t.roles == ["origin", "supplement", "update"]
    assert t.latest_unit_id == "n/u0"
    by = {u.id: u for u in new}
    assert by["n/u1"].superseded and by["n/u2"].superseded and not by["n/u0"].superseded
    assert by["n/u0"].trace_role == "update" and by["n/u0"].trace_id == t.id
    assert by["n/u3"].trace_id is None  # a lone unit is no trace (min size 2)
    assert units[1].trace_id is None  # inputs are not mutated


def test_fact_time_orders_before_utterance_time() -> None:
    units = [_u(0, "Mel", "live", "Paris", fact=None, said="2023-03-01"),
             _u(1, "Mel", "live", "Oslo", fact="2020-01-01", said="2023-05-01")]
    claim = np.stack([_vec(1, 0), _vec(1, 0.1)])
    rel = np.stack([_vec(1, 0), _vec(1, 0)])
    obj = np.stack([_vec(1, 0), _vec(0, 1)])
    _, (t,) = build_traces(units, claim, rel, obj, TraceConfig())
    assert t.unit_ids == ["n/u1", "n/u0"] and t.roles == ["origin", "update"]


def test_event_relations_accumulate_without_superseding() -> None:
    units = [_u(0, "Mel", "go", "camping at the beach", said="2023-01-01"),
             _u(1, "Mel", "go", "to a pottery class", said="2023-02-01")]
    claim = np.stack([_vec(1, 0), _vec(1, 0.1)])
    rel = np.stack([_vec(1, 0), _vec(1, 0)])
    obj = np.stack([_vec(1, 0), _vec(0, 1)])
    new, (t,) = build_traces(units, claim, rel, obj, TraceConfig())
    assert t.roles == ["origin", "supplement"] and not any(u.superseded for u in new)


def test_different_subjects_or_relations_or_pronouns_do_not_join() -> None:
    units = [_u(0, "Mel", "work", "a"), _u(1, "Caroline", "work", "b"), _u(2, "Mel", "paint", "c"),
             _u(3, "it", "be", "x"), _u(4, "it", "be", "y")]
    claim = np.stack([_vec(1, 0.01 * i) for i in range(5)])
    rel = np.stack([_vec(1, 0), _vec(1, 0), _vec(0, 1), _vec(1, 1), _vec(1, 1)])
    obj = np.stack([_vec(1, 0)] * 5)
    new, traces = build_traces(units, claim, rel, obj, TraceConfig())
    assert traces == [] and all(u.trace_id is None for u in new)


def test_only_fact_level_neighbours_are_examined() -> None:
    claim = np.stack([_vec(1, 0, 0), _vec(0.9, 0.1, 0), _vec(0, 0, 1), _vec(0, 0.1, 1)])
    assert neighbour_pairs(claim, 1) == [(0, 1), (2, 3)]
    assert len(neighbour_pairs(claim, 3)) == 6


def test_objects_encoded_lazily_only_for_state_traces() -> None:
    units = [_u(0, "Mel", "work", "a"), _u(1, "Mel", "work", "b"), _u(2, "Mel", "go", "c"), _u(3, "Mel", "go", "d")]
    claim = np.stack([_vec(1, 0, 0), _vec(1, 0.1, 0), _vec(0, 1, 0), _vec(0, 1, 0.1)])
    rel = np.stack([_vec(1, 0), _vec(1, 0), _vec(0, 1), _vec(0, 1)])
    asked: list[list[int]] = []

    def objects(idx: list[int]) -> np.ndarray:
        asked.append(idx)
        return np.stack([_vec(1, 0), _vec(0, 1)])

    _, traces = build_traces(units, claim, rel, objects, TraceConfig())
    assert asked == [[0, 1]]
    assert [t.roles for t in traces] == [["origin", "update"], ["origin", "supplement"]]
