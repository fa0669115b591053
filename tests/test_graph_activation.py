"""Graph activation (issue 26): aggregate questions from their form, the unit graph, its storage and
its lifecycle under add() / forget(), the entity-centred list, spreading activation, determinism."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from qgmem.llm.scripted import ScriptedBackend
from qgmem.methods import MethodContext, make_methods
from qgmem.pipeline import MemoryPipeline
from qgmem.retrieve import activation_graph as ag
from qgmem.retrieve.aggregate import is_aggregate, persons_asked
from qgmem.retrieve.config import RetrievalConfig
from qgmem.store import MemoryStore
from qgmem.types import AtomicUnit, Conversation, Question, Session, Turn

pytestmark = pytest.mark.usefixtures("one_thread")
ROOT = Path(__file__).resolve().parents[1]

AGGREGATE = [
    "What sports does Nadia play?",
    "Which cities has Omar lived in?",
    "How many times did Lena change jobs?",
    "What books has she read this year?",
    "In what ways does Tom help his neighbours?",
    "What kind of music does Priya listen to?",
    "What types of cake did they bake?",
    "What does Ravi like?",
    "What do Ravi's parents enjoy?",
    "What does Ines do to relax?",
    "What has Marco painted?",
    "Where have they travelled?",
    "What are all the places Hugo visited?",
    "Which languages can Yuki speak?",
]
SINGLE = [
    "Where does Nadia work now?",
    "When did Omar move to Lisbon?",
    "What is Lena's job?",
    "Who is Tom's manager?",
    "What did Priya buy yesterday?",
    "Why did Ravi quit?",
    "What was the name of the restaurant?",
    "Is Marco still in the band?",
    "What does this mean?",
    "What news did Ines share?",
]


@pytest.mark.parametrize("text", AGGREGATE)
def test_aggregate_questions_are_recognised_from_their_form(text: str) -> None:
    assert is_aggregate(text)


@pytest.mark.parametrize("text", SINGLE)
def test_single_fact_questions_are_not_aggregate(text: str) -> None:
    assert not is_aggregate(text)


def test_the_person_asked_is_a_named_speaker_or_the_asker_in_the_first_person() -> None:
    speakers = ["ann", "ben"]
    assert persons_asked("What sports does Ann play?", ["Ann", "Paris"], speakers, "user") == ["ann"]
    assert persons_asked("What did Carl buy?", ["Carl"], speakers, "user") == []  # not a speaker of this memory
    assert persons_asked("What did I buy?", [], ["user", "assistant"], "user") == ["user"]
    assert persons_asked("What did I buy?", [], speakers, "user") == []



def test_the_person_vector_takes_the_name_out_of_the_question() -> None:
    q, name = np.array([0.8, 0.6, 0.0]), np.array([0.0, 1.0, 0.0])
    v = ag.without_names(q, [name], 0.6)
    assert v.tolist() == pytest.approx([1.0, 0.0, 0.0])
    assert ag.without_names(q, [], 0.5).tolist() == pytest.approx(q.tolist())
    assert ag.without_names(name, [name], 1.0).tolist() == pytest.approx(name.tolist())  # nothing left: unchanged


def _unit(i: int, speaker: str, subject: str, entities: list[str], session: str = "s1", relation: str = "play",
          trace: str | None = None) -> AtomicUnit:
    return AtomicUnit(id=f"u{i}", namespace="ns", session_id=session, text=f"{speaker}: claim {i}", first_turn=f"D:{i}",
                      last_turn=f"D:{i}", turn_ids=[f"D:{i}"], speaker=speaker, subject=subject, relation=relation,
                      object="x", entities=entities, trace_id=trace)


UNITS = [
    _unit(0, "Ann", "Ann", ["Ann", "tennis"]),
    _unit(1, "Ann", "Ann's sister", ["tennis", "club"], session="s2"),
    _unit(2, "Ben", "Ann", ["Ann", "club"], relation="join"),
    _unit(3, "Ben", "Ben", ["chess"], session="s2", trace="t1"),
    _unit(4, "Ben", "Ben", ["chess"], session="s3", trace="t1"),
]


def test_unit_keys_and_person_nodes() -> None:
    assert ag.unit_keys(UNITS[1]) == ["p:ann", "o:ann", "s:ann's sister", "e:tennis", "e:club", "r:play", "d:s2"]
    g = ag.UnitGraph([ag.unit_keys(u) for u in UNITS])
    assert g.person_rows("Ann").tolist() == [0, 1, 2]  # two said by Ann, one said by Ben about Ann
    assert g.person_rows("ben").tolist() == [2, 3, 4]
    assert g.person_rows("carl").tolist() == []
    assert g.persons_rows(["Ann", "ben"]).tolist() == [0, 1, 2, 3, 4] and g.persons_rows(["ben"]).tolist() == [2, 3, 4]
    assert g.persons_rows([]).tolist() == []
    assert sorted(g.speakers) == ["ann", "ben"]
    assert g.units_of("e:tennis").tolist() == [0, 1]


def test_spreading_activation_follows_shared_keys_weighted_by_degree() -> None:
    g = ag.UnitGraph([ag.unit_keys(u) for u in UNITS])
    w = g.key_weights(["entity"], max_key_units=10)
    assert w[g.vocab["e:tennis"]] == pytest.approx(0.5) and w[g.vocab["r:play"]] == 0.0
    act = g.spread([0, 1, 2, 3, 4], np.array([1.0, 0.5, 0.4, 0.3, 0.2]), 1, w)  # unit 0 is the only seed
    # unit 1 shares "tennis" (degree 2) with the seed; unit 2 shares nothing but the speaker's own entity
    assert act.tolist() == pytest.approx([0.0, 0.5, 0.0, 0.0, 0.0])
    both = g.spread([0, 1, 2], np.array([1.0, 0.5, 0.4]), 2, w)
    # 0 <- 1 over "tennis", 1 <- 0 over "tennis" (its own score on "club" left out), 2 <- 1 over "club"
    assert both.tolist() == pytest.approx([0.5 * 0.5, 1.0 * 0.5, 0.5 * 0.5])
    assert g.key_weights(["entity"], max_key_units=1)[g.vocab["e:tennis"]] == 0.0  # too common: no edge


def test_blend_orders_by_fusion_plus_activation_ties_by_pool_position() -> None:
    rows, scores = ag.blend([7, 8, 9], np.array([1.0, 0.5, 0.5]), np.array([0.0, 0.0, 1.0]), 0.6)
    assert rows == [9, 7, 8] and scores.tolist() == pytest.approx([1.1, 1.0, 0.5])
    rows, _ = ag.blend([7, 8, 9], np.array([1.0, 0.5, 0.5]), np.array([0.0, 1.0, 1.0]), 0.5)
    assert rows == [7, 8, 9]  # 8 and 9 tie: pool order
    assert ag.blend([7, 8], np.array([1.0, 0.5]), np.zeros(2), 0.5)[0] == [7, 8]


def test_the_graph_is_stored_and_read_back_and_a_changed_unit_gets_new_keys(tmp_path) -> None:
    store = MemoryStore(tmp_path)
    first = ag.load_or_build(store, "ns", UNITS)
    assert first.computed == len(UNITS)
    again = ag.load_or_build(store, "ns", UNITS)
    assert again.computed == 0
    assert [again.keys(i) for i in range(again.n)] == [first.keys(i) for i in range(first.n)]
    moved = [*UNITS[:2], dataclasses.replace(UNITS[2], trace_id="t9"), *UNITS[3:]]
    changed = ag.load_or_build(store, "ns", moved)
    assert changed.computed == 1 and "t:t9" in changed.keys(2)
    shrunk = ag.load_or_build(store, "ns", moved[:3])
    assert shrunk.computed == 0
    stored = {k: [r["u"] for r in store.get_records("ns", k)] for k in store.record_kinds("ns")}
    assert stored == {f"{ag.RECORD_KIND}/s1": ["u0", "u2"], f"{ag.RECORD_KIND}/s2": ["u1"]}  # per session; s3 gone
    with pytest.raises(ValueError, match="graph.edges"):
        ag.check_edges(["entity", "colour"])


def _session(i: int, date: str) -> Session:
    people = ["Ann", "Ben"]
    turns = [Turn(f"D{i}:{j}", people[j % 2], f"In session {i} I played {['tennis', 'chess', 'golf'][j % 3]} "
                                              f"with my cousin number {i * 10 + j}.") for j in range(1, 5)]
    return Session(f"session_{i}", date, turns)


def _pipe(store_dir: Path, **graph) -> MemoryPipeline:
    retrieval = RetrievalConfig(k=5)
    retrieval.rerank.kind = "none"
    for k, v in graph.items():
        setattr(retrieval.graph, k, v)
    return MemoryPipeline(llm=ScriptedBackend([]), store_dir=store_dir, retrieval=retrieval, k=5)


def _graph_rows(pipe: MemoryPipeline, ns: str) -> list[tuple[str, list[str]]]:
    g = pipe.retriever._index[ns].graph
    units = pipe.retriever._index[ns].units
    return [(u.id, g.keys(i)) for i, u in enumerate(units)]


def test_add_of_one_session_computes_only_its_units_and_equals_a_rebuild(tmp_path) -> None:
    conv = Conversation("u1", [_session(i, f"2023-01-0{i}") for i in range(1, 5)], speakers=["Ann", "Ben"])
    grown = _pipe(tmp_path / "grown").add(conv)
    before = len(grown.store.units("u1"))
    writes: list[str] = []
    put = grown.store.put_records
    grown.store.put_records = lambda ns, kind, recs: (writes.append(kind), put(ns, kind, recs))[1]  # type: ignore
    grown.add([_session(5, "2023-01-05")], namespace="u1")
    assert f"{ag.RECORD_KIND}/session_5" in writes
    assert len([k for k in writes if k.startswith(ag.RECORD_KIND)]) <= 2  # the new session (+ one whose trace changed)
    new_units = len(grown.store.units("u1")) - before
    assert 0 < grown.retriever._index["u1"].graph.computed <= new_units + 2  # new units (+ trace changes at most)
    fresh = _pipe(tmp_path / "fresh").add(dataclasses.replace(conv, sessions=conv.sessions + [_session(5, "2023-01-05")]))
    assert _graph_rows(grown, "u1") == _graph_rows(fresh, "u1")


def test_forget_rebuilds_the_graph_from_what_remains(tmp_path) -> None:
    conv = Conversation("u1", [_session(i, f"2023-01-0{i}") for i in range(1, 5)], speakers=["Ann", "Ben"])
    pipe = _pipe(tmp_path / "a").add(conv)
    pipe.forget("u1", session_id="session_2")
    assert not [k for k in pipe.store.record_kinds("u1") if k.startswith(ag.RECORD_KIND)]  # goes with the text
    pipe.working_memory("What games does Ann play?", "u1")  # served again: indexed from the store
    rest = dataclasses.replace(conv, sessions=[s for s in conv.sessions if s.id != "session_2"])
    fresh = _pipe(tmp_path / "b").add(rest)
    assert _graph_rows(pipe, "u1") == _graph_rows(fresh, "u1")
    assert not any(k.endswith("session_2") for _, ks in _graph_rows(pipe, "u1") for k in ks)


def test_a_new_process_reads_the_stored_graph_and_answers_the_same(tmp_path) -> None:
    conv = Conversation("u1", [_session(i, f"2023-01-0{i}") for i in range(1, 4)], speakers=["Ann", "Ben"])
    path = tmp_path / "conv.json"
    path.write_text(json.dumps(dataclasses.asdict(conv)))
    script = textwrap.dedent(f"""
        import json, sys
        from qgmem.pipeline import MemoryPipeline
        from qgmem.retrieve.config import RetrievalConfig
        from qgmem.llm.scripted import ScriptedBackend
        from qgmem.types import conversation_from_dict
        r = RetrievalConfig(k=5); r.rerank.kind = "none"
        pipe = MemoryPipeline(llm=ScriptedBackend([]), store_dir={str(tmp_path / 'store')!r}, retrieval=r, k=5)
        if sys.argv[1] == "build":
            pipe.add(conversation_from_dict(json.load(open({str(path)!r}))))
        wm = pipe.working_memory("What games does Ann play?", "u1")
        print(json.dumps([pipe.retriever._index["u1"].graph.computed, wm.meta["graph"],
                          [[it.text, it.turn_ids, round(it.score, 6)] for it in wm.items]]))
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    out = [json.loads(subprocess.run([sys.executable, "-c", script, step], capture_output=True, text=True, env=env,
                                     timeout=300, check=True).stdout.strip().splitlines()[-1])
           for step in ("build", "query")]
    assert out[0][0] > 0 and out[1][0] == 0  # the second process computed no key
    assert out[0][1] == out[1][1] == {"persons": ["ann"], "aggregate": True}
    assert out[0][2] == out[1][2] and out[0][2]


def test_the_entity_centred_list_holds_the_persons_units_only_and_runs_are_deterministic(tmp_path) -> None:
    conv = Conversation("u1", [_session(i, f"2023-01-0{i}") for i in range(1, 5)], speakers=["Ann", "Ben"])
    pipe = _pipe(tmp_path).add(conv)
    idx = pipe.retriever._index["u1"]
    qv = pipe.retriever.embedder.encode(["What games does Ann play?"])[0]
    ranked = ag.person_ranking(idx.graph, ["ann"], lambda rows: idx.dense.scores_for(qv, rows),
                               lambda n: idx.dense.search(qv, n), 100)
    assert ranked and set(ranked) <= set(idx.graph.person_rows("ann").tolist())
    assert len(ranked) == len(set(ranked))
    first = pipe.working_memory("What games does Ann play?", "u1")
    assert first.meta["channel_sizes"]["person"] == len(ranked)
    again = _pipe(tmp_path).working_memory("What games does Ann play?", "u1")
    assert [(it.turn_ids, it.score) for it in first.items] == [(it.turn_ids, it.score) for it in again.items]


def test_the_ablation_runs_without_the_graph(tmp_path) -> None:
    methods = make_methods(["qgmem-activation", "qgmem-no-graph-activation"],
                           MethodContext(store=MemoryStore(tmp_path), retrieval=RetrievalConfig()), {})
    assert methods["qgmem-activation"].cfg.graph.enabled
    off = methods["qgmem-no-graph-activation"]
    assert not off.cfg.graph.enabled
    conv = Conversation("u1", [_session(1, "2023-01-01")], speakers=["Ann", "Ben"])
    off.build(conv)
    assert off._index["u1"].graph is None
    wm = off.activate(Question(id="q1", text="What games does Ann play?", answers=[], category="", conversation_id="u1"), 3)
    assert "person" not in wm.meta["channel_sizes"] and "graph" not in wm.meta
