"""One context-token count for every method: `qgmem.answer.count_tokens` of the memory text the answer
prompt shows; budget recall charges each entry the same way (its rendered text)."""

from __future__ import annotations


import pytest

from qgmem.answer import context_tokens, count_tokens, item_tokens, memory_text, serialize_working_memory
from qgmem.evaluation.config import RetrievalBenchConfig
from qgmem.evaluation.retrieval import run_benchmark
from qgmem.io import read_jsonl
from qgmem.methods import MethodContext, make_methods
from qgmem.retrieve.config import RetrievalConfig
from qgmem.store import MemoryStore
from qgmem.testing.hash_embedder import HashEmbedder, patch_embedder

METHODS = ["bm25-turns", "dense-turns", "full-context", "anchormem", "qgmem-activation", "qgmem-text"]


@pytest.fixture
def hashed(monkeypatch):
    return patch_embedder(monkeypatch, HashEmbedder(dim=64))


def _made(tmp_path) -> dict:
    cfg = RetrievalConfig(embedder="hash")
    opts = {"anchormem": {"integrator": "concat", "embedder": "hash"}, "full-context": {"max_context_tokens": 60}}
    return make_methods(METHODS, MethodContext(store=MemoryStore(tmp_path / "store"), retrieval=cfg), opts)


@pytest.mark.parametrize("name", [
    "bm25-turns", "dense-turns", "full-context", "anchormem",
    "qgmem-activation", "qgmem-text",
])
def test_every_method_counts_the_memory_text_the_answer_prompt_shows(name, tiny_conversation, tmp_path, hashed):
    m = _made(tmp_path)[name]
    m.build(tiny_conversation)
    for q in tiny_conversation.questions:
        wm = m.activate(q, 3)
        shown = memory_text(m, wm)
        assert wm.items and context_tokens(m, wm) == count_tokens(shown) > 0
        assert wm.context_tokens == count_tokens(shown)


def test_entry_costs_are_the_rendered_entries(tiny_conversation, tmp_path, hashed):
    made = _made(tmp_path)
    for name in ("bm25-turns", "anchormem", "qgmem-activation"):
        m = made[name]
        m.build(tiny_conversation)
        wm = m.activate(tiny_conversation.questions[2], 3)
        costs = item_tokens(m, wm)
        # entries are rendered one after the other: their costs add up to the shared serialisation
        assert sum(costs) == count_tokens(serialize_working_memory(wm, with_graph=False)) == context_tokens(m, wm)
    fc = made["full-context"]
    fc.build(tiny_conversation)
    wm = fc.activate(tiny_conversation.questions[0], 3)
    assert wm.meta["truncated"]  # the transcript was cut: its note is shown, and counted, once
    assert sum(item_tokens(fc, wm)) < context_tokens(fc, wm) == count_tokens(fc.render(wm))


def test_budget_recall_charges_what_the_answer_model_reads(tiny_conversation, tmp_path, hashed):
    """The run's budget recall keeps the entries whose rendered text fits: with the budget one token short
    of the first gold entry, nothing gold is kept; with exactly its cost, it is."""
    made = _made(tmp_path)
    m = made["bm25-turns"]
    m.build(tiny_conversation)
    q = tiny_conversation.questions[2]  # What is Bob reading? gold D1:4, D2:2
    wm = m.activate(q, 5)
    costs = item_tokens(m, wm)
    first = next(r for r, it in enumerate(wm.items) if set(it.turn_ids) & set(q.evidence))
    need = sum(costs[: first + 1])
    for budget, expect_gold in ((need - 1, False), (need, True)):
        cfg = RetrievalBenchConfig(output_dir=str(tmp_path / f"out{budget}"), store_dir=str(tmp_path / "s2"), k=5,
                                   token_budget=budget, methods=["bm25-turns"], run_name="r")
        s = run_benchmark(cfg, [tiny_conversation])
        rows = {r["qid"]: r for r in read_jsonl(tmp_path / f"out{budget}" / "locomo" / "r" / "retrieval.jsonl")}
        row = rows["c1/q3"]
        assert (row["scores"]["budget_recall"] > 0) is expect_gold
        assert row["context_tokens"] == context_tokens(m, wm)
        assert s["token_count"] == "words and punctuation marks"
