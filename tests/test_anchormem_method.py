"""AnchorMemMethod end to end on the tiny conversation: persistence in the shared MemoryStore,
retrieval shape (contexts from anchored facts + events), no leakage, resume, failures, and the
HTTP backend against the local OpenAI-compatible test server."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from qgmem.testing.openai_server import OpenAIServer
from qgmem.anchormem import AnchorMemConfig, AnchorMemMethod
from qgmem.anchormem.units import make_chunks
from qgmem.llm import LLMConfig, ScriptedBackend, make_backend
from qgmem.store import MemoryStore
from qgmem.types import Conversation, MemoryMethod, Question

FACTS = {  # first line of each 2-turn chunk -> the facts a good extractor returns for it
    "Hi Bob! I started a new job": ["Alice started a new job at Acme Corp as a data analyst.",
                                    "Bob went hiking in Yosemite with his sister Carol."],
    "My dog Rex turned 3": ["Alice's dog Rex turned 3 on 1 May 2023.", "Bob is reading the book Dune."],
    "I love Dune": ["Alice loves the book Dune.", "Alice lives in Seattle.", "Bob is learning to play the guitar."],
    "good luck with the guitar": ["Alice wished Bob good luck with the guitar."],
    "Big news: I left Acme": ["Alice left Acme Corp and now works at Globex as a manager.",
                              "Bob finished reading Dune and started reading Foundation."],
    "Last month I visited Paris": ["Alice visited Paris with her mom in July 2023."],
}
EVENTS = {"Fact 1: Alice started a new job": "Alice moved from a data analyst job at Acme Corp to a manager job at Globex.",
          "Fact 1: Bob is reading": "Bob read Dune and then started Foundation."}
GLOBEX = EVENTS["Fact 1: Alice started a new job"]


def reply_text(content: str, n_messages: int = 1) -> str:
    if "extract atomic facts" in content:
        convo = content.rsplit("Conversation (", 1)[1]
        for key, facts in FACTS.items():
            if key in convo:
                return json.dumps({"facts": facts})
        raise AssertionError(f"unexpected chunk: {convo[:200]}")
    for key, event in EVENTS.items():
        if key in content:
            return json.dumps({"event": event})
    return '{"event": "unrelated"}'


def scripted() -> ScriptedBackend:
    return ScriptedBackend(lambda req: reply_text(req.messages[0]["content"], len(req.messages)))


CFG = AnchorMemConfig(extractor="llm", tau=0.70, n_neighbors=3, top_k=3, save_every=2)


def test_llm_build_persists_and_activates(tmp_path: Path, tiny_conversation: Conversation) -> None:
    store = MemoryStore(tmp_path / "store")
    llm = scripted()
    m = AnchorMemMethod(store, CFG, llm=llm)
    assert isinstance(m, MemoryMethod)
    m.build(tiny_conversation)
    ns = tiny_conversation.id
    assert len(store.get_records(ns, "am_chunks")) == 6
    facts = store.get_records(ns, "am_facts")
    assert len(facts) == sum(len(v) for v in FACTS.values()) == 11
    events = store.get_records(ns, "am_events")
    assert sorted(e["text"] for e in events) == sorted(EVENTS.values())
    ev = next(e for e in events if "Globex" in e["text"])
    assert ev["chunk_ids"] == ["S1#0", "S2#0"] and ev["integrator"] == "llm"
    ids, mat, model = store.get_embeddings(ns, "am_facts")
    assert mat.shape == (11, 384) and ids == [f["id"] for f in facts] and model == "minilm"
    assert store.get_embeddings(ns, "am_events")[1].shape == (2, 384)
    st = m.stats(ns)["event_stats"]
    assert st["events"] == 2 and st["clusters"]["duplicate_clusters"] == 2
    assert st["llm"]["calls"] == 2 and m.stats(ns)["fact_stats"]["llm"]["calls"] == 6

    q_work = Question("qw", "Which company does Alice work for now?", ["Globex"], "4", conversation_id="c1")
    wm = m.activate(q_work, k=1)
    kinds = [it.kind for it in wm.items]
    assert kinds == ["context", "event"]
    assert wm.items[0].turn_ids == ["D2:1", "D2:2"]
    assert "Globex" in wm.items[0].text and wm.items[0].meta["anchor_facts"]
    assert wm.items[1].text == GLOBEX and wm.items[1].turn_ids == ["D1:1", "D1:2", "D2:1", "D2:2"]  # LLM facts carry their chunk
    wm3 = m.activate(tiny_conversation.questions[2], k=3)  # "What is Bob reading?"
    contexts = [it for it in wm3.items if it.kind == "context"]
    assert len(contexts) == len({it.meta["chunk_id"] for it in contexts}) <= 3  # deduplicated chunks
    assert {"D1:4", "D2:2"} <= set(wm3.turn_ids())
    assert EVENTS["Fact 1: Bob is reading"] in [it.text for it in wm3.items if it.kind == "event"]
    assert [it.score for it in wm3.items] == sorted((it.score for it in wm3.items), reverse=True)  # merged
    # the shared text answer path: citable labels M1.., each raw context rendered once
    from qgmem.answer import serialize_working_memory

    assert [it.label for it in wm3.items] == [f"M{i + 1}" for i in range(len(wm3.items))]
    text = serialize_working_memory(wm3, with_graph=False)
    assert "[M1]" in text and text.count("Wow! I finished Dune and started reading Foundation.") == 1
    first = AnchorMemMethod(store, dataclasses.replace(CFG, item_order="contexts_first"), llm=llm)
    kinds3 = [it.kind for it in first.activate(tiny_conversation.questions[2], k=3).items]
    assert kinds3 == sorted(kinds3) and kinds3.count("event") == 2  # contexts, then events

    # a fresh method over the same store answers without any LLM call or rebuild
    m2 = AnchorMemMethod(store, CFG, llm=ScriptedBackend([]))
    wm_again = m2.activate(q_work, k=1)
    assert [it.text for it in wm_again.items] == [it.text for it in wm.items]
    m2.build(tiny_conversation)  # same settings: loads, no calls
    assert m2.llm.requests == []


def test_rule_facts_without_llm(tmp_path: Path, tiny_conversation: Conversation) -> None:
    from qgmem.anchormem.facts import rule_units

    store = MemoryStore(tmp_path / "store")
    m = AnchorMemMethod(store, AnchorMemConfig(tau=0.5))  # defaults: rule facts, concat events, no LLM
    assert m.llm is None
    m.build(tiny_conversation)
    units = rule_units(tiny_conversation)
    facts = store.get_records("c1", "am_facts")
    assert sorted(f["text"] for f in facts) == sorted(u.text for u in units) and len(facts) >= 10
    chunk_turns = {c["id"]: set(c["turn_ids"]) for c in store.get_records("c1", "am_chunks")}
    assert all(set(f["turn_ids"]) <= chunk_turns[f["chunk_id"]] and f["source"] == "rule" for f in facts)
    events = store.get_records("c1", "am_events")
    assert events and all(e["integrator"] == "concat" for e in events)
    for e in events:  # concatenation of its facts in time order, one per context
        texts = {f["id"]: f["text"] for f in facts}
        assert e["text"].startswith(texts[e["fact_ids"][0]].rstrip(".")) and len(set(e["chunk_ids"])) == len(e["chunk_ids"])
    assert m.stats("c1")["event_stats"]["llm"]["calls"] == 0
    q = Question("qw", "Which company does Alice work for now?", ["Globex"], "4", conversation_id="c1")
    assert "D2:1" in m.activate(q, k=3).turn_ids()


def test_no_leakage_every_session_indexed(tmp_path: Path, tiny_conversation: Conversation) -> None:
    # questions that only name session 2 must not decide what is indexed
    conv = dataclasses.replace(tiny_conversation, questions=[
        Question("q", "Where does Alice work now?", ["Globex"], "4", evidence=["D2:1"], evidence_sessions=["S2"],
                 conversation_id="c1")])
    bare = dataclasses.replace(tiny_conversation, id="c1-bare", questions=[])
    store = MemoryStore(tmp_path / "store")
    m = AnchorMemMethod(store, CFG, llm=scripted())
    m.build(conv)
    m.build(bare)
    chunks = store.get_records("c1", "am_chunks")
    assert [t for c in chunks for t in c["turn_ids"]] == [t.id for t in conv.turns()]
    strip = lambda recs: [{k: v for k, v in r.items()} for r in recs]  # noqa: E731
    for kind in ("am_chunks", "am_facts", "am_events"):
        assert strip(store.get_records("c1", kind)) == strip(store.get_records("c1-bare", kind))
    # a session-1 question finds session-1 context although no question's evidence names session 1
    q = Question("q9", "Where did Bob go hiking?", [], "4", conversation_id="c1")
    assert m.activate(q, k=1).items[0].turn_ids == ["D1:1", "D1:2"]


def test_changed_tau_rebuilds_only_events(tmp_path: Path, tiny_conversation: Conversation) -> None:
    store = MemoryStore(tmp_path / "store")
    AnchorMemMethod(store, CFG, llm=scripted()).build(tiny_conversation)
    llm = scripted()
    strict = AnchorMemMethod(store, dataclasses.replace(CFG, tau=0.95), llm=llm)
    strict.build(tiny_conversation)
    assert llm.requests == []  # no fact extraction again, and no cluster survives tau=0.95
    st = strict.stats("c1")["event_stats"]
    assert st["events"] == 0 and st["clusters"]["isolated_facts"] == 11
    assert store.get_records("c1", "am_events") == [] and len(store.get_records("c1", "am_facts")) == 11
    wm = strict.activate(tiny_conversation.questions[0], k=2)
    assert [it.kind for it in wm.items] == ["context", "context"]
    # a method with other settings refuses to answer from this store instead of mixing settings
    with pytest.raises(ValueError, match="built with other settings.*tau=0.95"):
        AnchorMemMethod(store, CFG, llm=scripted()).activate(tiny_conversation.questions[0])


def test_interrupted_fact_extraction_resumes(tmp_path: Path, tiny_conversation: Conversation) -> None:
    store = MemoryStore(tmp_path / "store")
    calls = {"n": 0}

    def dying(req) -> str:
        calls["n"] += 1
        if calls["n"] > 3:
            raise KeyboardInterrupt  # the job is killed after 3 calls (checkpoint every 2 chunks)
        return reply_text(req.messages[0]["content"])

    with pytest.raises(KeyboardInterrupt):
        AnchorMemMethod(store, CFG, llm=ScriptedBackend(dying)).build(tiny_conversation)
    assert len(store.get_records("c1", "am_facts_partial")) == 2
    llm = scripted()
    AnchorMemMethod(store, CFG, llm=llm).build(tiny_conversation)
    extraction = [r for r in llm.requests if "extract atomic facts" in r.messages[0]["content"]]
    assert len(extraction) == 4  # the 2 checkpointed chunks are not asked again
    assert len(store.get_records("c1", "am_facts")) == 11 and store.get_records("c1", "am_facts_partial") == []


def test_invalid_llm_output_is_recorded_not_dropped(tmp_path: Path, tiny_conversation: Conversation) -> None:
    store = MemoryStore(tmp_path / "store")

    def reply(req) -> str:
        content = req.messages[0]["content"]
        if "extract atomic facts" in content and "Last month I visited Paris" in content.rsplit("Conversation (", 1)[1]:
            return "Sorry, I can't."
        return reply_text(content)

    m = AnchorMemMethod(store, dataclasses.replace(CFG, llm_retries=2), llm=ScriptedBackend(reply))
    m.build(tiny_conversation)
    fails = store.failures("c1")
    assert [f["key"] for f in fails] == ["am_facts:S2#1"] and fails[0]["raw"] == "Sorry, I can't."
    fs = m.stats("c1")["fact_stats"]
    assert fs["failed_chunks"] == 1 and fs["facts"] == 10 and fs["llm"]["calls"] == 8  # 6 + 2 re-asks


def test_empty_conversation(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "store")
    m = AnchorMemMethod(store, CFG, llm=ScriptedBackend([]))
    m.build(Conversation(id="empty", sessions=[]))
    wm = m.activate(Question("q", "anything?", [], "4", conversation_id="empty"))
    assert wm.items == [] and wm.turn_ids() == []
    assert m.stats("empty")["event_stats"]["events"] == 0


def test_config_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="extractor='llm' needs an LLM"):
        AnchorMemMethod(MemoryStore(tmp_path / "s"), AnchorMemConfig(extractor="llm"))
    with pytest.raises(ValueError, match="tau"):
        AnchorMemConfig(tau=1.5)
    m = AnchorMemMethod(MemoryStore(tmp_path / "s"), CFG, llm=ScriptedBackend([]))
    with pytest.raises(KeyError, match="not built"):
        m.activate(Question("q", "x", [], "4", conversation_id="nope"))


def test_http_backend_against_local_server(tmp_path: Path, tiny_conversation: Conversation) -> None:
    with OpenAIServer(lambda req: reply_text(req["messages"][0]["content"])) as srv:
        llm = make_backend(LLMConfig(backend="openai", base_url=srv.base_url, model="test-model", cache=False,
                                     max_concurrency=4))
        m = AnchorMemMethod(MemoryStore(tmp_path / "store"), CFG, llm=llm)
        m.build(tiny_conversation)
        n_requests = len(srv.requests)
    assert n_requests == 6 + 2  # one extraction per chunk, one integration per event
    assert all(r.get("response_format", {}).get("type") == "json_object" for r in srv.requests)
    st = m.stats("c1")
    assert st["event_stats"]["events"] == 2 and st["event_stats"]["integrator"] == "llm"
    assert st["event_stats"]["llm"]["prompt_tokens"] > 0 and st["fact_stats"]["facts"] == 11
    assert st["llm_model"] == "test-model"
    assert llm.usage.as_dict()["construction"]["calls"] == 8
