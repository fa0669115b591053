"""build_memory: real turn ids, resume after a crash = uninterrupted build, incremental sessions."""

from __future__ import annotations

import copy
import dataclasses

import pytest
from qgmem.testing.hash_embedder import HashEmbedder

from qgmem.construct.build import BuildConfig, BuildReport, build_memory, conversation_windows
from qgmem.construct.rule import RuleExtractor
from qgmem.construct.traces import TraceConfig
from qgmem.store import MemoryStore
from qgmem.types import Conversation, Session, Turn


class CrashAfter(RuleExtractor):
    """Raises in the middle of a build, like a kill after `n` windows were committed."""

    def __init__(self, n: int):
        super().__init__()
        self.n = n

    def run(self, windows, ns, speakers):
        for k, res in enumerate(super().run(windows, ns, speakers)):
            if k == self.n:
                raise KeyboardInterrupt("simulated kill")
            yield res


def _long_conversation() -> Conversation:
    facts = ["I started working at Acme Corp as an analyst.", "I adopted a puppy named Max last week.",
             "We went camping at the beach last weekend.", "My sister Carol moved to Seattle in May 2023.",
             "I am learning to play the violin.", "I finished reading Dune yesterday.",
             "I now work at Globex as a manager.", "Thanks so much!"]
    sessions = []
    for s in range(3):
        turns = [Turn(f"D{s + 1}:{i + 1}", "Alice" if i % 2 == 0 else "Bob", facts[(i + s) % len(facts)])
                 for i in range(13)]
        sessions.append(Session(f"session_{s + 1}", f"2023-0{s + 5}-10T10:00", turns))
    return Conversation("conv-x", sessions, speakers=["Alice", "Bob"])


def _snapshot(store: MemoryStore, ns: str):
    units = [dataclasses.asdict(u) for u in store.units(ns)]
    traces = [dataclasses.asdict(t) for t in store.traces(ns)]
    emb = store.get_embeddings(ns, "claim")
    return units, traces, (emb[0], emb[1].round(6).tolist()) if emb else None


@pytest.mark.slow
def test_build_tiny_conversation_with_minilm(tmp_path, tiny_conversation) -> None:
    store = MemoryStore(tmp_path)
    report = BuildReport()
    units, traces = build_memory(tiny_conversation, store=store, report=report)
    valid = {t.id for t in tiny_conversation.turns()}
    assert units and all(u.turn_ids and set(u.turn_ids) <= valid for u in units)
    assert store.units("c1") == units and store.traces("c1") == traces
    assert store.get_embeddings("c1", "claim") is None  # traces read unit fields: the build encodes nothing
    assert store.is_done("c1", "traces")
    ex = report.phases["extraction"]
    assert ex.units == len(units) and ex.windows == len(conversation_windows(tiny_conversation))
    assert report.phases["embedding"].texts_encoded == 0
    for t in traces:
        members = [u for u in units if u.id in t.unit_ids]
        assert len(members) >= 2 and len({u.subject.lower() for u in members}) == 1


def test_crash_then_resume_equals_uninterrupted(tmp_path) -> None:
    conv = _long_conversation()
    emb = HashEmbedder()
    ref = MemoryStore(tmp_path / "ref")
    build_memory(conv, store=ref, embedder=emb)

    st = MemoryStore(tmp_path / "crash")
    with pytest.raises(KeyboardInterrupt):
        build_memory(conv, extractor=CrashAfter(5), store=st, embedder=emb)
    partial = st.units("conv-x")
    assert 0 < len(partial) < len(ref.units("conv-x"))
    assert not st.is_done("conv-x", "traces")
    st.close()
    st = MemoryStore(tmp_path / "crash")  # a fresh process
    report = BuildReport()
    build_memory(conv, store=st, embedder=emb, report=report)
    assert report.phases["extraction"].resumed_windows == 5
    assert _snapshot(st, "conv-x") == _snapshot(ref, "conv-x")
    # a second run does nothing new
    calls = emb.calls
    build_memory(conv, store=st, embedder=emb)
    assert emb.calls == calls and _snapshot(st, "conv-x") == _snapshot(ref, "conv-x")


def test_adding_sessions_extracts_only_new_windows(tmp_path) -> None:
    conv = _long_conversation()
    first = copy.deepcopy(conv)
    first.sessions = conv.sessions[:2]
    other = copy.deepcopy(conv)
    other.id = "conv-y"
    cfg = BuildConfig(traces=TraceConfig(update_threshold=0.4))
    emb = HashEmbedder()
    st = MemoryStore(tmp_path / "inc")
    build_memory(other, store=st, embedder=emb, config=cfg)
    build_memory(first, store=st, embedder=emb, config=cfg)
    n_before = len(st.units("conv-x"))
    before_y = _snapshot(st, "conv-y")
    report = BuildReport()
    build_memory(conv, store=st, embedder=emb, report=report, config=cfg)
    ex = report.phases["extraction"]
    assert ex.resumed_windows == len(conversation_windows(first))
    assert ex.windows == len(conversation_windows(conv)) - len(conversation_windows(first))
    assert len(st.units("conv-x")) > n_before
    ref = MemoryStore(tmp_path / "ref")
    build_memory(conv, store=ref, embedder=HashEmbedder(), config=cfg)
    assert _snapshot(st, "conv-x") == _snapshot(ref, "conv-x")
    assert _snapshot(st, "conv-y") == before_y  # other namespaces untouched
    assert st.get_conversation("conv-x") == conv


def test_a_build_finished_by_another_process_meanwhile_is_not_redone(tmp_path, monkeypatch) -> None:
    """The done markers are read once, before the write lock; another process that builds the same
    growth between that read and the lock leaves nothing to extract (nor duplicate units)."""
    conv = _long_conversation()
    first = copy.deepcopy(conv)
    first.sessions = conv.sessions[:2]
    cfg = BuildConfig()
    st, other = MemoryStore(tmp_path / "s"), MemoryStore(tmp_path / "s")
    build_memory(first, store=st, config=cfg)
    real_writer = MemoryStore.writer

    def writer_after_the_other_process(self):
        if self is st:
            build_memory(conv, store=other, config=cfg)  # finishes while this build waits for the lock
        return real_writer(self)

    monkeypatch.setattr(MemoryStore, "writer", writer_after_the_other_process)
    report = BuildReport()
    units, _ = build_memory(conv, store=st, config=cfg, report=report)
    assert report.phases["extraction"].windows == 0  # nothing extracted twice
    assert [u.id for u in units] == [u.id for u in other.units(conv.id)]
    other.close()
    st.close()


def test_delete_then_rebuild(tmp_path) -> None:
    conv = _long_conversation()
    st = MemoryStore(tmp_path)
    build_memory(conv, store=st, embedder=HashEmbedder())
    snap = _snapshot(st, "conv-x")
    st.delete_namespace("conv-x")
    assert st.units("conv-x") == [] and st.namespaces() == []
    build_memory(conv, store=st, embedder=HashEmbedder())
    assert _snapshot(st, "conv-x") == snap


def test_without_store_returns_units(tiny_conversation) -> None:
    units, _ = build_memory(tiny_conversation, embedder=HashEmbedder())
    assert len(units) > 5 and all(u.namespace == "c1" for u in units)


def test_bad_config_is_rejected() -> None:
    with pytest.raises(ValueError, match="extractor"):
        BuildConfig(extractor="magic")


@pytest.mark.parametrize("change", ["version", "words"])
def test_a_changed_rule_extractor_extracts_every_window_again(tmp_path, tiny_conversation, monkeypatch,
                                                                change) -> None:
    import qgmem.construct.build as build

    with MemoryStore(tmp_path / "s") as store:
        build_memory(tiny_conversation, "rule", store=store, embedder=HashEmbedder(dim=16))
        assert build.pending_windows(tiny_conversation, store, BuildConfig()) == []
        if change == "version":  # the extractor's code changed
            monkeypatch.setattr(build, "RULE_VERSION", build.RULE_VERSION + 1)
        else:  # one of its word lists (and the trace tables) changed
            real = build.words_digest
            monkeypatch.setattr(build, "words_digest", lambda names: real(names) + "-edited")
        n = len(conversation_windows(tiny_conversation))
        assert len(build.pending_windows(tiny_conversation, store, BuildConfig())) == n


def test_a_changed_trace_rule_regroups_a_stored_memory_without_extracting_it(tmp_path, tiny_conversation,
                                                                               monkeypatch) -> None:
    """A store built before a trace change serves today's traces: a benchmark run that passes the stored
    conversation unchanged regroups once (the old traces are not served) and extracts nothing again."""
    import qgmem.construct.build as build
    import qgmem.construct.trace_key as trace_key

    calls = []
    real = build.build_traces
    monkeypatch.setattr(build, "build_traces", lambda *a, **k: calls.append(1) or real(*a, **k))
    with MemoryStore(tmp_path / "s") as store:
        build_memory(tiny_conversation, "rule", store=store)
        assert len(calls) == 1
        build_memory(tiny_conversation, "rule", store=store)
        assert len(calls) == 1  # current: served as stored
        monkeypatch.setattr(trace_key, "TRACE_VERSION", trace_key.TRACE_VERSION + 1)  # the trace rules changed
        report = BuildReport()
        build_memory(tiny_conversation, "rule", store=store, report=report)
        assert len(calls) == 2 and report.phases["extraction"].windows == 0
        build_memory(tiny_conversation, "rule", store=store)
        assert len(calls) == 2  # regrouped once, then current again
