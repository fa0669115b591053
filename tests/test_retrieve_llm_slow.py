"""LLM reranker (Qwen3-Reranker format, yes/no next-token logits) and LLM query parser with the real local
SmolLM2, directly and through the HTTP backend against the local OpenAI-compatible test server."""

from __future__ import annotations

import math

import pytest
from conftest import REDUCED
from qgmem.testing.openai_server import OpenAIServer

from qgmem.retrieve.config import RerankConfig, RetrievalConfig
from qgmem.retrieve.method import QGMemRetriever
from qgmem.retrieve.query import QueryParser
from qgmem.retrieve.rerank import CausalYesNoReranker, ChatYesNoReranker, qwen3_pair, yes_no_messages

pytestmark = pytest.mark.slow

DOCS = ["Fact: Alice now works at Globex as a manager.\nAttributes: speaker=Alice",
        "Fact: Bob is learning to play the guitar.\nAttributes: speaker=Bob"]


@pytest.fixture(scope="module")
def smol_reranker() -> CausalYesNoReranker:
    return CausalYesNoReranker("smollm2", "Judge whether the memory answers the question", max_length=256,
                               batch_size=4)


def test_yes_no_scores_are_the_softmax_of_the_two_next_token_logits(smol_reranker):
    import torch

    r = smol_reranker
    assert r.tok.decode([r.yes]).strip() == "yes" and r.tok.decode([r.no]).strip() == "no"
    scores = r.score("Where does Alice work now?", DOCS)
    assert len(scores) == 2 and all(0.0 < s < 1.0 for s in scores)
    ids = r._encode("Where does Alice work now?", DOCS[0])
    text = r.tok.decode(ids)
    assert text.startswith("<|im_start|>system\nJudge whether the Document meets the requirements")
    # SmolLM2's own chat template: ChatML without a think block (enable_thinking is ignored)
    assert text == r.tok.apply_chat_template(yes_no_messages(qwen3_pair(r.instruction, "Where does Alice work now?",
                                                                        DOCS[0])), tokenize=False,
                                             add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n") and "<Document>: Fact: Alice" in text
    with torch.no_grad():
        logits = r.lm(input_ids=torch.tensor([ids])).logits[0, -1]
    p_yes = 1 / (1 + math.exp(float(logits[r.no] - logits[r.yes])))
    assert scores[0] == pytest.approx(p_yes, abs=1e-4)  # batching with left padding changes nothing
    long_doc = "Fact: " + "very long memory " * 400
    assert len(r._encode("q?", long_doc)) <= 256 and r.tok.decode(r._encode("q?", long_doc)).endswith("assistant\n")


def test_qgmem_with_smollm2_reranker_and_llm_query_parser(tiny_conversation, smol_reranker):
    from qgmem.llm import make_backend
    from qgmem.llm.config import LLMConfig

    from test_retrieve_method import units_and_traces

    llm = make_backend(LLMConfig(backend="hf", model="smollm2", cache=False, max_new_tokens=64 if REDUCED else 128))
    top_n = 4 if REDUCED else 9
    cfg = RetrievalConfig(query_parser="llm", rerank=RerankConfig(kind="llm", model="smollm2", top_n=top_n))
    r = QGMemRetriever(None, cfg, llm=llm, reranker=smol_reranker)
    r.parser.max_tokens = 64 if REDUCED else 160
    units, traces = units_and_traces()
    r.index_units(tiny_conversation, units, traces)
    q = tiny_conversation.questions[1]  # When did Alice visit Paris?
    wm = r.activate(q, k=3)
    assert len(wm.items) == 3 and wm.context_tokens > 0
    src = wm.meta["constraints"]["source"]
    assert src in ("llm", "rule-fallback")
    assert (len(r.parser.failures) == 1) == (src == "rule-fallback")  # an unusable reply is counted, not dropped
    assert llm.usage.phases["retrieval"].calls >= 1
    again = r.activate(q, k=3)  # temperature 0, deterministic reranker
    assert [it.unit.id for it in again.items] == [it.unit.id for it in wm.items]


def test_smollm2_over_http_for_parser_and_chat_reranker():
    from qgmem.llm import make_backend
    from qgmem.llm.config import LLMConfig

    local = make_backend(LLMConfig(backend="hf", model="smollm2", cache=False, max_new_tokens=96))
    with OpenAIServer.from_backend(local) as srv:
        http = make_backend(LLMConfig(backend="openai", model="smollm2", base_url=srv.base_url, cache=False,
                                      max_retries=0, max_concurrency=1))
        parser = QueryParser("llm", http)
        c = parser.parse("What did Alice do in Paris last month?", "2023-09-01")
        assert c.source in ("llm", "rule-fallback") and len(parser.failures) == int(c.source == "rule-fallback")
        rr = ChatYesNoReranker(http, "Judge whether the memory answers the question")
        docs = DOCS[:1] if REDUCED else DOCS
        scores = rr.score("Where does Alice work now?", docs)
        assert len(scores) == len(docs) and all(s in (0.0, 0.5, 1.0) for s in scores)
        assert rr.failures == sum(1 for s in scores if s == 0.5)  # unreadable replies are counted
        assert len(srv.requests) >= 1 + len(docs)
    assert http.usage.phases["retrieval"].calls >= 1 + len(docs)
