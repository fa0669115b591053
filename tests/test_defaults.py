"""One source of truth for the retrieval defaults: the library a user calls is the configuration that was
measured. `RetrievalConfig()`'s defaults are what the benchmark configs run, and those configs state only
what they change."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from qgmem.config import load_config, to_dict
from qgmem.evaluation.config import RetrievalBenchConfig
from qgmem.llm.scripted import ScriptedBackend
from qgmem.pipeline import MemoryPipeline
from qgmem.retrieve.config import RetrievalConfig
from qgmem.training.rerank_config import RerankTrainConfig

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ["configs/eval/locomo_retrieval_cpu.yaml", "configs/eval/longmemeval_s_retrieval_cpu.yaml"]


@pytest.mark.parametrize("path", MEASURED)
def test_pipeline_retrieval_settings_are_those_of_the_benchmark_config(path, tmp_path):
    cfg = load_config(RetrievalBenchConfig, ROOT / path)
    pipe = MemoryPipeline(llm=ScriptedBackend([]), store_dir=tmp_path)
    try:
        assert to_dict(pipe.retrieval) == to_dict(cfg.retrieval)
    finally:
        pipe.close()


def test_reranker_pools_come_from_the_default_pipeline():
    cfg = load_config(RerankTrainConfig, ROOT / "configs/rerank/pool_mlp.yaml")
    assert to_dict(cfg.retrieval) == to_dict(RetrievalConfig())


def _restated(section: dict, defaults: dict, where: str) -> list[str]:
    out = []
    for key, value in section.items():
        if isinstance(value, dict) and isinstance(defaults.get(key), dict):
            out += _restated(value, defaults[key], f"{where}.{key}")
        elif key in defaults and value == defaults[key]:
            out.append(f"{where}.{key}")
    return out


@pytest.mark.parametrize("path", sorted(str(p.relative_to(ROOT)) for d in ("eval", "rerank")
                                         for p in (ROOT / "configs" / d).glob("*.yaml")))
def test_run_configs_state_only_what_they_change_of_the_retrieval_defaults(path):
    """A run config that restates a default keeps its own copy of it, which drifts when the default moves.
    (Prepare configs state the paper's parameters on purpose: a prepared set records them.)"""
    raw = yaml.safe_load((ROOT / path).read_text()) or {}
    section = raw.get("retrieval") if isinstance(raw, dict) else None
    if not isinstance(section, dict):
        return
    assert _restated(section, to_dict(RetrievalConfig()), "retrieval") == [], f"{path} restates defaults"


@pytest.mark.parametrize("flags", [{"avx2"}, {"avx512f", "amx_bf16"}])
def test_the_default_embeds_in_float32_on_every_cpu(monkeypatch, tmp_path, flags) -> None:
    """One default, one set of numbers: the CPU's bf16 units change nothing unless a run asks for `:auto`."""
    import json

    import qgmem.embed as E
    from qgmem.evaluation.runs import open_run

    monkeypatch.setattr(E, "cpu_flags", lambda: flags)
    run_dir, _ = open_run(RetrievalBenchConfig(benchmark="locomo", output_dir=str(tmp_path), run_name="r"))
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["embed_precision"] == "fp32" and meta["embedder"] == "minilm@128"


@pytest.mark.parametrize("flags, precision", [({"avx2"}, "fp32"), ({"avx512f", "amx_bf16"}, "bf16")])
def test_an_auto_run_records_the_precision_it_embeds_in_and_is_not_resumed_under_another(monkeypatch, tmp_path,
                                                                                        flags, precision) -> None:
    import json

    import qgmem.embed as E
    from qgmem.evaluation.runs import open_run

    monkeypatch.setattr(E, "cpu_flags", lambda: flags)
    cfg = RetrievalBenchConfig(benchmark="locomo", output_dir=str(tmp_path), run_name="r")
    cfg.retrieval.embedder = "minilm@128:auto"
    run_dir, _ = open_run(cfg)
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["embed_precision"] == precision and meta["embedder"] == E.resolve_name(cfg.retrieval.embedder)
    other = {"avx2"} if precision == "bf16" else {"amx_bf16"}
    monkeypatch.setattr(E, "cpu_flags", lambda: other)
    with pytest.raises(ValueError, match="cannot resume: the run embedded with"):
        open_run(cfg)
