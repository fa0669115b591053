"""LLMConfig from YAML/overrides and make_backend wiring."""

from __future__ import annotations

from pathlib import Path

import pytest

from qgmem.config import ConfigError, load_config
from qgmem.llm import LLMConfig, ScriptedBackend, make_backend


def test_llm_config_from_yaml_with_overrides(tmp_path: Path) -> None:
    p = tmp_path / "llm.yaml"
    p.write_text("backend: openai\nmodel: Qwen/Qwen2.5-7B-Instruct\nbase_url: http://gpu:8000/v1\ntimeout_s: 30\n")
    cfg = load_config(LLMConfig, p, ["max_concurrency=32", "cache=false"])
    assert cfg.backend == "openai" and cfg.model == "Qwen/Qwen2.5-7B-Instruct"
    assert cfg.timeout_s == 30.0 and cfg.max_concurrency == 32 and cfg.cache is False
    assert LLMConfig().backend == "hf" and LLMConfig().model == "smollm2" and LLMConfig().max_new_tokens == 512


def test_llm_config_rejects_bad_values(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="backend.*'gpt'"):
        LLMConfig(backend="gpt")
    with pytest.raises(ValueError, match="max_concurrency"):
        LLMConfig(max_concurrency=0)
    p = tmp_path / "llm.yaml"
    p.write_text("backnd: hf\n")
    with pytest.raises(ConfigError, match="backnd"):
        load_config(LLMConfig, p)


def test_make_backend_scripted_needs_replies() -> None:
    with pytest.raises(ValueError, match="replies"):
        make_backend(LLMConfig(backend="scripted", cache=False))
    be = make_backend(LLMConfig(backend="scripted", cache=False), replies=["yes"])
    assert isinstance(be, ScriptedBackend)
    assert be.chat([{"role": "user", "content": "ok?"}]).text == "yes"
