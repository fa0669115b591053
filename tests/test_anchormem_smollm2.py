"""AnchorMem with the real local SmolLM2-135M backend on one LoCoMo conversation (slow).

Facts: rule units for the whole conversation plus SmolLM2 extraction on the first chunks; events:
SmolLM2 integration of the retained clusters (REDUCED: 2 clusters, 1 extracted chunk, short replies, no re-ask). A 135M model
often breaks the JSON format: what is asserted is that every cluster/chunk ends as an event/fact
list or as a recorded failure with its raw reply, and that calls and tokens are accounted.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from conftest import REDUCED
from qgmem.anchormem import AnchorMemConfig, AnchorMemMethod
from qgmem.anchormem.facts import FactStats, extract_facts_llm
from qgmem.anchormem.units import make_chunks
from qgmem.llm import LLMConfig, make_backend
from qgmem.store import MemoryStore

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smollm2():
    return make_backend(LLMConfig(backend="hf", model="smollm2", cache=False, max_new_tokens=160, batch_size=4))


@pytest.fixture(scope="module")
def conv26(data_dir: Path):
    from qgmem.data.locomo import load_locomo

    conv = load_locomo(data_dir / "locomo" / "locomo10.json")[0]
    assert conv.id == "conv-26"
    return conv


def test_smollm2_event_integration_end_to_end(tmp_path: Path, smollm2, conv26) -> None:
    cfg = AnchorMemConfig(extractor="rule", integrator="llm", event_max_tokens=64 if REDUCED else 128,
                          llm_retries=0 if REDUCED else 1, max_clusters=2 if REDUCED else 0, save_every=4)
    store = MemoryStore(tmp_path / "store")
    m = AnchorMemMethod(store, cfg, llm=smollm2)
    m.build(conv26)
    st = m.stats(conv26.id)["event_stats"]
    integrated = st["clusters"]["retained_clusters"] - st["clusters"]["skipped_clusters"]
    assert integrated >= (2 if REDUCED else 10)
    assert st["integrator"] == "llm" and st["events"] + st["failed_events"] == integrated
    assert st["llm"]["calls"] >= integrated and st["llm"]["prompt_tokens"] > 0 and st["llm"]["completion_tokens"] > 0
    fails = [f for f in store.failures(conv26.id) if f["key"].startswith("am_events:")]
    assert len(fails) == st["failed_events"] and all(f["raw"] is not None for f in fails)
    events = store.get_records(conv26.id, "am_events")
    facts = {f["id"]: f for f in store.get_records(conv26.id, "am_facts")}
    for e in events:
        assert e["text"].strip() and e["integrator"] == "llm"
        assert len(e["chunk_ids"]) == len(set(e["chunk_ids"])) >= 2
        assert [facts[f]["chunk_id"] for f in e["fact_ids"]] == e["chunk_ids"]
    if events:  # retrievable through their own embeddings
        ids, mat, _ = store.get_embeddings(conv26.id, "am_events")
        assert mat.shape[0] == len(events)
    q = conv26.questions[0]
    wm = m.activate(q, k=5)
    assert sum(it.kind == "context" for it in wm.items) >= 1
    assert smollm2.usage.as_dict()["construction"]["calls"] == st["llm"]["calls"]


def test_smollm2_fact_extraction_accounts_every_chunk(smollm2, conv26) -> None:
    chunks = make_chunks(conv26)[: 1 if REDUCED else 4]
    failures: list[tuple[str, str, str]] = []
    stats = FactStats()
    by_chunk = extract_facts_llm(chunks, conv26.speakers, smollm2, max_tokens=96 if REDUCED else 256,
                                 retries=0 if REDUCED else 1, stats=stats,
                                 on_failure=lambda k, e, r: failures.append((k, e, r)))
    assert set(by_chunk) == {c.id for c in chunks}
    assert stats.failed_chunks == len(failures) and stats.llm.calls >= len(chunks)
    assert stats.llm.completion_tokens > 0
    for key, err, raw in failures:
        assert key.startswith("am_facts:") and err
    for facts in by_chunk.values():
        assert all(isinstance(f, str) and f for f in facts)
