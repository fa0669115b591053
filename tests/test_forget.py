"""Forgetting removes the text and everything derived from it: no file of the store directory still
holds a forgotten sentence, and what remains equals a fresh build of the conversation without it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from qgmem.construct.build import BuildConfig, build_memory
from qgmem.construct.forget import forget, without
from qgmem.store import MemoryStore
from qgmem.testing.hash_embedder import HashEmbedder

SECRET = "zebra-4242"
CFG = BuildConfig(embedder="hash")


def _files_holding(root: Path, needle: str) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def _memory(store: MemoryStore, ns: str) -> tuple[list[dict], list[dict]]:
    return [dataclasses.asdict(u) for u in store.units(ns)], [dataclasses.asdict(t) for t in store.traces(ns)]


@pytest.fixture
def secret_conversation(tiny_conversation):
    tiny_conversation.sessions[0].turns[3].text = f"My locker code at the gym is {SECRET}, don't tell."
    return tiny_conversation


def _build(conv, root: Path) -> MemoryStore:
    store = MemoryStore(root)
    build_memory(conv, "rule", store=store, config=CFG, embedder=HashEmbedder(dim=64))
    # derived caches that quote the text, as the retriever and AnchorMem write them
    texts = [t.text for t in conv.turns()]
    store.set_embeddings(conv.id, "retrieval-doc-s1-c0", texts, HashEmbedder(dim=8).encode(texts), "hash")
    store.put_records(conv.id, "am_facts", [{"text": t} for t in texts])
    return store


def test_forgotten_turn_leaves_no_trace_in_the_store_directory(tmp_path, secret_conversation) -> None:
    root = tmp_path / "store"
    store = _build(secret_conversation, root)
    assert _files_holding(root, SECRET), "the secret is in the store before forgetting"
    forget(store, "c1", turn_ids=["D1:4"], embedder=HashEmbedder(dim=64))
    remaining = store.get_conversation("c1")
    assert "D1:4" not in {t.id for t in remaining.turns()} and len(remaining.turns()) == 10
    assert all("D1:4" not in u.turn_ids for u in store.units("c1"))
    store.close()
    assert _files_holding(root, SECRET) == []


def test_forgetting_a_session_equals_a_fresh_build_without_it(tmp_path, secret_conversation) -> None:
    store = _build(secret_conversation, tmp_path / "a")
    forget(store, "c1", session_id="S2", embedder=HashEmbedder(dim=64))
    fresh = MemoryStore(tmp_path / "b")
    build_memory(without(secret_conversation, session_id="S2"), "rule", store=fresh, config=CFG,
                 embedder=HashEmbedder(dim=64))
    assert _memory(store, "c1") == _memory(fresh, "c1")
    assert {u.session_id for u in store.units("c1")} == {"S1"}


def test_forgetting_a_namespace_removes_it_everywhere(tmp_path, secret_conversation) -> None:
    root = tmp_path / "store"
    store = _build(secret_conversation, root)
    forget(store, "c1")
    assert store.namespaces() == [] and store.settings("c1") is None
    store.close()
    assert _files_holding(root, SECRET) == []


def test_unknown_ids_are_an_error_and_change_nothing(tmp_path, secret_conversation) -> None:
    store = _build(secret_conversation, tmp_path / "s")
    before = _memory(store, "c1")
    with pytest.raises(KeyError, match=r"no turn\(s\) \['D9:9'\]"):
        forget(store, "c1", turn_ids=["D9:9"])
    with pytest.raises(KeyError, match="no session 'S7'"):
        forget(store, "c1", session_id="S7")
    assert _memory(store, "c1") == before


def test_forgetting_an_llm_window_deletes_its_cached_replies(tmp_path, secret_conversation) -> None:
    """The LLM extraction request quotes the turn and the response cache keeps the reply: both go."""
    import json
    import re

    from qgmem.llm import LLMConfig, make_backend

    def reply(req) -> str:
        new = re.findall(r"^\[([^\]]+)\] \[NEW\] (\w+): (.*)$", req.messages[0]["content"], re.M)
        return json.dumps({"units": [{"claim": f"{s} said: {t}", "first_turn": i, "last_turn": i, "speaker": s,
                                      "subject": s, "relation": "say", "object": "it", "entities": [],
                                      "location": None, "fact_time_start": None, "fact_time_end": None}
                                     for i, s, t in new]})

    cache_dir = tmp_path / "llm-cache"
    backend = make_backend(LLMConfig(backend="scripted", model="x", cache_dir=str(cache_dir)), replies=reply)
    cfg = BuildConfig(extractor="llm", consolidation="rule", embedder="hash")
    store = MemoryStore(tmp_path / "store")
    build_memory(secret_conversation, "llm", llm=backend, store=store, config=cfg, embedder=HashEmbedder(dim=64))
    assert _files_holding(cache_dir, SECRET), "the cached reply quotes the secret"
    n_cached = len(backend)
    forget(store, "c1", turn_ids=["D1:4"], llm=backend, embedder=HashEmbedder(dim=64))
    store.close()
    backend.close()
    assert _files_holding(cache_dir, SECRET) == [] and _files_holding(tmp_path / "store", SECRET) == []
    assert 0 < len(make_backend(LLMConfig(backend="scripted", model="x", cache_dir=str(cache_dir)), replies=reply)) \
        <= n_cached, "the other windows' replies stay cached"
