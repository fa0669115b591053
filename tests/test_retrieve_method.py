"""QGMemRetriever end to end on the tiny conversation: working memory shape, traces, rerankers, edge cases."""

from __future__ import annotations

import pytest
from qgmem.testing.openai_server import OpenAIServer

from qgmem.answer import context_tokens
from qgmem.retrieve.config import RerankConfig, RetrievalConfig
from qgmem.retrieve.method import QGMemRetriever
from qgmem.retrieve.rerank import ChatYesNoReranker, Reranker
from qgmem.types import AtomicUnit, Conversation, MemoryTrace, Question


def U(i: str, turn: str, speaker: str, text: str, subj: str, rel: str, obj: str, ents: list[str] | None = None,
      loc: str | None = None, t0: str | None = None, utt: str = "2023-05-08", superseded: bool = False,
      trace: str | None = None, role: str | None = None) -> AtomicUnit:
    return AtomicUnit(id=i, namespace="c1", session_id=turn.split(":")[0].replace("D", "S"), text=text,
                      first_turn=turn, last_turn=turn, turn_ids=[turn], speaker=speaker, subject=subj, relation=rel,
                      object=obj, entities=ents or [], location=loc, fact_time_start=t0, fact_time_end=t0,
                      utterance_time=utt, trace_id=trace, trace_role=role, superseded=superseded)


def units_and_traces() -> tuple[list[AtomicUnit], list[MemoryTrace]]:
    units = [
        U("u1", "D1:1", "Alice", "Alice works at Acme Corp as a data analyst.", "Alice", "works at", "Acme Corp",
          ["Acme Corp"], superseded=True, trace="t1", role="origin"),
        U("u2", "D1:2", "Bob", "Bob went hiking in Yosemite with his sister Carol.", "Bob", "went hiking", "Yosemite",
          ["Carol", "Yosemite"], loc="Yosemite", t0="2023-05-07"),
        U("u3", "D1:3", "Alice", "Alice's dog Rex turned 3 on 1 May 2023.", "Rex", "turned", "3", ["Rex"],
          t0="2023-05-01"),
        U("u4", "D1:4", "Bob", "Bob is reading Dune.", "Bob", "is reading", "Dune", ["Dune"], trace="t2", role="origin",
          superseded=True),
        U("u5", "D1:5", "Alice", "Alice lives in Seattle.", "Alice", "lives in", "Seattle", ["Seattle"], loc="Seattle"),
        U("u6", "D1:6", "Bob", "Bob is learning to play the guitar.", "Bob", "learning", "guitar", ["guitar"]),
        U("u7", "D2:1", "Alice", "Alice left Acme Corp and now works at Globex as a manager.", "Alice", "works at",
          "Globex", ["Globex", "Acme Corp"], utt="2023-08-20", trace="t1", role="update"),
        U("u8", "D2:2", "Bob", "Bob finished Dune and started reading Foundation.", "Bob", "is reading", "Foundation",
          ["Dune", "Foundation"], utt="2023-08-20", trace="t2", role="update"),
        U("u9", "D2:3", "Alice", "Alice visited Paris with her mom in July 2023.", "Alice", "visited", "Paris",
          ["Paris", "mom"], loc="Paris", t0="2023-07-01", utt="2023-08-20"),
    ]
    traces = [MemoryTrace("t1", "c1", "Alice", "works at", ["u1", "u7"], ["origin", "update"], "u7"),
              MemoryTrace("t2", "c1", "Bob", "is reading", ["u4", "u8"], ["origin", "update"], "u8")]
    return units, traces


@pytest.fixture
def retriever(tiny_conversation: Conversation) -> QGMemRetriever:
    r = QGMemRetriever(None, RetrievalConfig())
    units, traces = units_and_traces()
    r.index_units(tiny_conversation, units, traces)
    return r


def test_working_memory_holds_ranked_units_with_source_trajectory_and_token_count(retriever, tiny_conversation):
    q = tiny_conversation.questions[0]  # Where does Alice work now? gold D2:1
    wm = retriever.activate(q, k=3)
    assert len(wm.items) == 3 and wm.method == "qgmem"
    assert "D2:1" in wm.turn_ids()
    top = {it.unit.id: it for it in wm.items}
    it = top["u7"]
    assert it.kind == "unit" and it.turn_ids == ["D2:1"] and it.label.startswith("M")
    assert it.source_text == "Alice: Big news: I left Acme Corp and now work at Globex as a manager."
    assert any("superseded" in line and "Acme Corp" in line for line in it.trajectory)
    assert any("current" in line and "(this memory)" in line for line in it.trajectory)
    assert wm.context_tokens == context_tokens(retriever, wm) > 0  # the text the answer prompt shows
    scores = [x.score for x in wm.items]
    assert scores == sorted(scores, reverse=True)


def test_attribute_channel_uses_location_and_time(retriever, tiny_conversation):
    q = Question("qp", "What did Alice do in Paris?", ["visited"], "4", evidence=["D2:3"], conversation_id="c1",
                 question_time="2023-09-01")
    wm = retriever.activate(q, k=2)
    assert wm.meta["constraints"]["location"] == "Paris"
    assert wm.meta["channel_sizes"]["attribute"] >= 1
    assert wm.items[0].turn_ids == ["D2:3"]
    q2 = Question("qt", "What happened to the dog on 1 May, 2023?", ["turned 3"], "2", evidence=["D1:3"],
                  conversation_id="c1")
    wm2 = retriever.activate(q2, k=3)
    assert wm2.meta["constraints"]["time"] == ["2023-05-01", "2023-05-01"]
    assert "D1:3" in wm2.turn_ids()


def test_candidate_document_marks_superseded_states_instead_of_hiding_them(retriever):
    idx = retriever._index["c1"]
    u1 = next(u for u in idx.units if u.id == "u1")
    doc = idx.texts.candidate_document(u1)
    assert doc.startswith("Fact: Alice works at Acme Corp")
    assert "Status: superseded by a later update: Alice left Acme Corp and now works at Globex" in doc
    assert "Source dialogue:\nAlice: Hi Bob! I started a new job at Acme Corp" in doc
    assert "Attributes: speaker=Alice" in doc and "Trajectory:" in doc
    assert "Trajectory:" not in idx.texts.candidate_document(u1, with_trajectory=False)


class _PreferWord(Reranker):
    def __init__(self, word: str):
        self.word = word
        self.seen: list[str] = []

    def score(self, query: str, docs: list[str]) -> list[float]:
        self.seen.extend(docs)
        return [1.0 if self.word in d else 0.0 for d in docs]


def test_reranker_reorders_the_pool_over_structured_documents(tiny_conversation):
    units, traces = units_and_traces()
    rr = _PreferWord("Yosemite")
    r = QGMemRetriever(None, RetrievalConfig(rerank=RerankConfig(kind="none", weight=1.0)), reranker=rr)
    r.index_units(tiny_conversation, units, traces)
    q = Question("qx", "What is Bob doing?", [], "4", evidence=["D1:2"], conversation_id="c1")
    wm = r.activate(q, k=3)
    assert wm.items[0].unit.id == "u2"
    assert rr.seen and all(d.startswith("Fact: ") and "Attributes:" in d for d in rr.seen)


def test_chat_reranker_through_http_server(tiny_conversation):
    from qgmem.llm import make_backend
    from qgmem.llm.config import LLMConfig

    def handler(req: dict) -> str:
        user = req["messages"][-1]["content"]
        assert user.startswith("<Instruct>:") and "<Query>: Where does Alice live?" in user
        return "yes" if "Seattle" in user.split("<Document>:")[1] else "no"

    with OpenAIServer(handler) as srv:
        llm = make_backend(LLMConfig(backend="openai", model="test-model", base_url=srv.base_url, cache=False,
                                     max_retries=0, max_concurrency=4))
        cfg = RetrievalConfig(rerank=RerankConfig(kind="chat", weight=1.0))
        r = QGMemRetriever(None, cfg, llm=llm)
        units, traces = units_and_traces()
        r.index_units(tiny_conversation, units, traces)
        wm = r.activate(Question("ql", "Where does Alice live?", [], "4", evidence=["D1:5"], conversation_id="c1"), k=2)
    assert wm.items[0].unit.id == "u5"
    assert isinstance(r.reranker, ChatYesNoReranker) and r.reranker.failures == 0
    assert llm.usage.phases["retrieval"].calls == len(units)


def test_spans_already_covered_do_not_take_a_slot(tiny_conversation):
    units, traces = units_and_traces()
    dup = U("u2b", "D1:2", "Bob", "Bob's sister is Carol.", "Bob", "sister", "Carol", ["Carol"])
    r = QGMemRetriever(None, RetrievalConfig())
    r.index_units(tiny_conversation, units + [dup], traces)
    wm = r.activate(Question("qc", "Who is Carol, Bob's sister hiking in Yosemite?", [], "1", conversation_id="c1"), k=4)
    spans = [tuple(it.turn_ids) for it in wm.items]
    assert len(spans) == len(set(spans)) == 4


def test_empty_memory_unknown_conversation_empty_and_huge_queries(tiny_conversation):
    r = QGMemRetriever(None, RetrievalConfig())
    r.index_units(tiny_conversation, [], [])
    q = tiny_conversation.questions[0]
    wm = r.activate(q, k=10)
    assert wm.items == [] and wm.meta["empty_memory"] and wm.context_tokens == 0
    with pytest.raises(KeyError, match="nope"):
        r.activate(Question("qz", "Where?", [], "4", conversation_id="nope"))
    with pytest.raises(ValueError, match="empty text"):
        r.activate(Question("qe", "   ", [], "4", conversation_id="c1"))
    with pytest.raises(ValueError, match="k must be positive"):
        r.activate(q, k=0)
    full = QGMemRetriever(None, RetrievalConfig(max_query_chars=200))
    units, traces = units_and_traces()
    full.index_units(tiny_conversation, units, traces)
    huge = Question("qh", "Where does Alice work now? " + "blah " * 20000, [], "4", conversation_id="c1")
    wm = full.activate(huge, k=3)
    assert wm.meta["query_truncated_from_chars"] == len(huge.text) and len(wm.items) == 3
    assert "D2:1" in wm.turn_ids()


def test_bad_config_is_rejected():
    with pytest.raises(ValueError, match="channels"):
        QGMemRetriever(None, RetrievalConfig(channels=["lexical", "graph"]))
    with pytest.raises(ValueError, match="rerank.kind"):
        QGMemRetriever(None, RetrievalConfig(rerank=RerankConfig(kind="magic")))


def test_build_through_store_caches_units_and_embeddings(tiny_conversation, tmp_path, monkeypatch):
    from qgmem.store import MemoryStore

    with MemoryStore(tmp_path / "store") as st:
        r = QGMemRetriever(st, RetrievalConfig())
        r.build(tiny_conversation)
        assert st.units("c1") and st.is_done("c1", "traces")
        # dense documents with the source span and a neighbouring turn; no raw-turn vectors (turn channels off)
        stored = ("retrieval-doc-s1-c1", "retrieval-doc-s0-c0", "turns")
        kinds = [k for k in stored if st.get_embeddings("c1", k) is not None]
        assert kinds == ["retrieval-doc-s1-c1"]
        wm = r.activate(tiny_conversation.questions[0], k=5)
        assert "D2:1" in wm.turn_ids()
        n_units = len(st.units("c1"))
        r2 = QGMemRetriever(st, RetrievalConfig())
        r2.build(tiny_conversation)  # loads, does not extract again
        assert len(st.units("c1")) == n_units
        assert r2.activate(tiny_conversation.questions[0], k=5).turn_ids() == wm.turn_ids()
    # a later process reads every vector from the store: nothing is encoded again (a vector encoded in
    # another batch differs in its last bits under bf16, so re-encoding made reruns drift)
    with MemoryStore(tmp_path / "store") as st:
        r3 = QGMemRetriever(st, RetrievalConfig())
        batches: list[list[str]] = []
        encode = r3.embedder.encode  # the embedder is shared by the process: patched for this test only
        monkeypatch.setattr(r3.embedder, "encode", lambda texts, **kw: batches.append(list(texts)) or encode(texts, **kw))
        r3.build(tiny_conversation)
        assert batches == []
        assert r3.activate(tiny_conversation.questions[0], k=5).turn_ids() == wm.turn_ids()


def test_long_traces_render_a_compact_trajectory(tiny_conversation):
    from qgmem.retrieve.documents import UnitTexts

    units = [U(f"v{i}", "D1:4", "Bob", f"Bob is reading book {i}.", "Bob", "is reading", f"book {i}",
               superseded=i < 7, trace="tb") for i in range(8)]
    tr = MemoryTrace("tb", "c1", "Bob", "is reading", [u.id for u in units], ["origin"] + ["update"] * 7, "v7")
    texts = UnitTexts(tiny_conversation, units, [tr])
    lines = texts.trajectory(units[2])
    assert len(lines) == 4
    assert any("(this memory)" in x and "book 2" in x for x in lines)
    assert any("current" in x and "book 7" in x for x in lines)
    assert [x for x in lines if "book 1" in x or "book 3" in x]  # its neighbours in the trace
    assert all("superseded" in x for x in lines if "book 7" not in x)
