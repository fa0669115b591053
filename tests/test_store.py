"""MemoryStore: round trips, per-namespace isolation, atomic window commits, deletion."""

from __future__ import annotations

import dataclasses
import sqlite3

import numpy as np
import pytest

from qgmem.store import MemoryStore, StoreError
from qgmem.types import AtomicUnit, MemoryTrace


def _unit(ns: str, i: int, turn: str = "D1:1") -> AtomicUnit:
    return AtomicUnit(id=f"{ns}/u{i}", namespace=ns, session_id="S1", text=f"claim {i}", first_turn=turn,
                      last_turn=turn, turn_ids=[turn], speaker="Alice", subject="Alice", relation="go",
                      object=f"place {i}", entities=["Alice"], fact_time_start="2023-05-07")


def test_round_trip_and_order(tmp_path, tiny_conversation) -> None:
    st = MemoryStore(tmp_path / "s")
    st.put_conversation(tiny_conversation)
    st.add_units("c1", [_unit("c1", 2), _unit("c1", 0)])
    st.add_units("c1", [_unit("c1", 1)])
    assert [u.id for u in st.units("c1")] == ["c1/u2", "c1/u0", "c1/u1"]  # insertion order, not id order
    assert st.units("c1")[0] == _unit("c1", 2)
    assert st.get_conversation("c1") == tiny_conversation
    st.close()
    # a new process sees the same thing
    st2 = MemoryStore(tmp_path / "s")
    assert st2.namespaces() == ["c1"]
    assert [u.id for u in st2.units("c1")] == ["c1/u2", "c1/u0", "c1/u1"]
    with pytest.raises(KeyError, match="nope"):
        st2.get_conversation("nope")


def test_wal_mode(tmp_path) -> None:
    MemoryStore(tmp_path).close()
    assert sqlite3.connect(tmp_path / "store.sqlite").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_duplicate_unit_rolls_back_whole_window_and_marker(tmp_path) -> None:
    st = MemoryStore(tmp_path)
    st.add_units("n", [_unit("n", 0)], done_key="w0")
    with pytest.raises(StoreError, match="n/u0"):
        st.add_units("n", [_unit("n", 1), _unit("n", 0)], done_key="w1")
    assert [u.id for u in st.units("n")] == ["n/u0"]  # u1 was rolled back with the failing window
    assert st.is_done("n", "w0") and not st.is_done("n", "w1")


def test_wrong_namespace_is_rejected(tmp_path) -> None:
    with pytest.raises(StoreError, match="namespace"):
        MemoryStore(tmp_path).add_units("a", [_unit("b", 0)])


def test_traces_replace_and_update_units(tmp_path) -> None:
    st = MemoryStore(tmp_path)
    us = [_unit("n", 0), _unit("n", 1)]
    st.add_units("n", us)
    t = MemoryTrace("n/t0", "n", "Alice", "go", ["n/u0", "n/u1"], ["origin", "update"], "n/u1")
    us = [dataclasses.replace(us[0], trace_id="n/t0", trace_role="origin", superseded=True),
          dataclasses.replace(us[1], trace_id="n/t0", trace_role="update")]
    st.put_traces("n", [t], us)
    assert st.traces("n") == [t]
    assert [(u.trace_role, u.superseded) for u in st.units("n")] == [("origin", True), ("update", False)]
    st.put_traces("n", [])
    assert st.traces("n") == []


def test_embeddings_records_failures_and_delete(tmp_path) -> None:
    st = MemoryStore(tmp_path)
    st.add_units("a", [_unit("a", 0)])
    st.add_units("b", [_unit("b", 0)])
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    st.set_embeddings("a", "claim", ["x", "y"], m, "minilm")
    st.set_embeddings("b", "claim", ["z"], m[:1], "minilm")
    ids, got, model = st.get_embeddings("a", "claim")
    assert ids == ["x", "y"] and model == "minilm" and np.array_equal(got, m)
    assert st.get_embeddings("a", "object") is None
    with pytest.raises(StoreError, match="shape"):
        st.set_embeddings("a", "claim", ["x"], m, "minilm")
    st.put_records("a", "facts", [{"f": 1}, {"f": 2}])
    st.put_records("a", "facts", [{"f": 3}])
    assert st.get_records("a", "facts") == [{"f": 3}]
    st.record_failure("a", "extract:S1#w0", "invalid JSON", "{oops")
    assert st.failures("a")[0]["raw"] == "{oops"
    st.mark_done("a", "step")
    files_before = sorted(p.name for p in (tmp_path / "embeddings").glob("*.npy"))
    assert len(files_before) == 2
    st.delete_namespace("a")
    assert st.units("a") == [] and st.get_embeddings("a", "claim") is None and st.failures("a") == []
    assert not st.is_done("a", "step") and st.get_records("a", "facts") == []
    assert len(list((tmp_path / "embeddings").glob("*.npy"))) == 1  # b's file stays
    assert st.namespaces() == ["b"] and st.get_embeddings("b", "claim")[0] == ["z"]


def test_cached_vectors_reuse_a_text_across_namespaces_until_deleted(tmp_path) -> None:
    from qgmem.store import MemoryStore

    calls: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return np.ones((len(texts), 4), np.float32) * len(calls)

    with MemoryStore(tmp_path / "s") as store:
        store.cached_vectors("a", "turns", ["shared session text", "only in a"], encode, "m")
        m, n = store.cached_vectors("b", "docs", ["shared session text", "only in b"], encode, "m")
        assert calls[1] == ["only in b"] and n == 1  # the shared text was encoded once, in namespace a
        assert store.get_embeddings("b", "docs")[1].shape == (2, 4)  # b holds its own copy of the row
        store.delete_namespace("a")
        store.cached_vectors("c", "docs", ["shared session text"], encode, "m")
        assert calls[2] == ["shared session text"]  # after a deletion nothing is reused from memory


def _vec(text: str) -> np.ndarray:
    """A distinct vector per text (its bytes), so a row served for the wrong text shows."""
    v = np.zeros(8, np.float32)
    for i, b in enumerate(text.encode()[:8]):
        v[i] = b
    return v


def test_cached_vectors_gather_stored_remembered_and_new_rows_in_order(tmp_path) -> None:
    import hashlib

    encoded: list[str] = []

    def encode(texts: list[str]) -> np.ndarray:
        encoded.extend(texts)
        return np.stack([_vec(t) for t in texts])

    with MemoryStore(tmp_path / "s") as store:
        store.cached_vectors("a", "k", ["xx", "yy"], encode, "m")
        store.cached_vectors("b", "k", ["zz"], encode, "m")  # zz is now remembered, not stored under a
        m, n = store.cached_vectors("a", "k", ["zz", "xx", "ww", "xx"], encode, "m", prune=False)
        assert encoded == ["xx", "yy", "zz", "ww"] and n == 1
        assert np.array_equal(m, np.stack([_vec(t) for t in ["zz", "xx", "ww", "xx"]]))
    with MemoryStore(tmp_path / "s") as store:  # a new process: rows from the file only
        ids, mat, _ = store.get_embeddings("a", "k")
        texts = ["xx", "yy", "zz", "ww"]  # stored rows first, then the remembered one, then the new one
        assert ids == [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        assert np.array_equal(mat, np.stack([_vec(t) for t in texts]))
        m, n = store.cached_vectors("a", "k", ["ww", "yy"], encode, "m")
        assert n == 0 and np.array_equal(m, np.stack([_vec("ww"), _vec("yy")]))
        assert store.get_embeddings("a", "k")[0] == [ids[3], ids[1]]  # pruned to these texts, in their order


def test_cached_vectors_of_a_grown_or_cut_list_are_its_texts_rows(tmp_path) -> None:
    """The rows of a list that grew at its end (an added session) or lost its tail are served without a
    gather; each must still be its own text's vector, in the store and in what is returned."""
    def encode(texts: list[str]) -> np.ndarray:
        return np.stack([_vec(t) for t in texts])

    with MemoryStore(tmp_path / "s") as store:
        store.cached_vectors("a", "k", ["aa", "bb"], encode, "m")
        for texts in (["aa", "bb", "cc"], ["aa", "bb"], ["bb", "aa", "dd"]):
            m, _ = store.cached_vectors("a", "k", texts, encode, "m")
            want = np.stack([_vec(t) for t in texts])
            assert np.array_equal(m, want) and np.array_equal(store.get_embeddings("a", "k")[1], want)


def test_units_reuse_unchanged_records_and_see_every_change(tmp_path) -> None:
    st = MemoryStore(tmp_path / "s")
    st.add_units("c1", [_unit("c1", 0), _unit("c1", 1)], done_key="extract:w0@1")
    first = st.units("c1")
    again = st.units("c1")
    assert again == first and all(a is b for a, b in zip(again, first))  # unchanged records: not parsed again
    st.update_units("c1", [dataclasses.replace(first[1], trace_id="c1/t0")])
    other = MemoryStore(tmp_path / "s")  # another process adds a unit
    other.add_units("c1", [_unit("c1", 2)])
    now = st.units("c1")
    assert [u.trace_id for u in now] == [None, "c1/t0", None] and now[0] is first[0] and now[1] is not first[1]
    assert first[1].trace_id is None  # what was returned before is not changed
    assert st.drop_sources("c1", ["extract:w0@1"]) == 2 and [u.id for u in st.units("c1")] == ["c1/u2"]
    other.close()
    st.close()


def test_version_changes_when_another_connection_commits(tmp_path) -> None:
    st, other = MemoryStore(tmp_path / "s"), MemoryStore(tmp_path / "s")
    v = st.version()
    st.mark_done("c1", "step")  # its own writes leave what it read current
    assert st.version() == v
    other.mark_done("c1", "other step")
    assert st.version() != v and st.done_keys("c1") == {"step", "other step"}
    other.close()
    st.close()
