"""How to reach an LLM: one dataclass shared by every pipeline step and every config file."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

BACKENDS = ("hf", "openai", "scripted")


@dataclass
class LLMConfig:
    """Backend choice and call policy.

    backend: "hf" (local transformers model), "openai" (any OpenAI-compatible server such as vLLM or
    api.openai.com; `base_url` includes the `/v1` prefix), or "scripted" (unit tests).
    model: for "hf" a local folder, a hub id or the alias "smollm2"; for "openai" the served model name.
    cache: keep deterministic (temperature 0) replies on disk so that reruns cost nothing.
    """

    backend: str = "hf"
    model: str = "smollm2"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    max_concurrency: int = 8
    timeout_s: float = 60.0
    max_retries: int = 4
    cache: bool = True
    cache_dir: str | None = None
    max_new_tokens: int = 512
    # extensions (all optional)
    device: str | None = None  # hf: "cpu", "cuda", ...; None picks cuda when available
    dtype: str | None = None  # hf: "float32", "bfloat16", "float16"; None: bf16 on cuda, fp32 on cpu
    batch_size: int = 8  # hf: prompts generated together (left padding) in complete_many
    backoff_base_s: float = 1.0  # http: first retry waits about this long, doubling each time
    backoff_max_s: float = 30.0  # http: cap for one backoff wait (a server's Retry-After is honoured up to 300 s)
    cache_sampled: bool = False  # also cache temperature > 0 replies (makes sampling repeat itself)
    # keyword arguments for the model's chat template, e.g. {"enable_thinking": false} to switch Qwen3's
    # thinking off: passed to apply_chat_template (hf) or sent as the request's chat_template_kwargs (openai)
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    extra_body: dict[str, Any] = field(default_factory=dict)  # openai: more request fields, e.g. {"top_k": 1}

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"LLMConfig.backend: {self.backend!r} is not one of {list(BACKENDS)}")
        if self.max_concurrency < 1:
            raise ValueError(f"LLMConfig.max_concurrency must be >= 1, got {self.max_concurrency}")
        if self.max_retries < 0:
            raise ValueError(f"LLMConfig.max_retries must be >= 0, got {self.max_retries}")
        if self.timeout_s <= 0:
            raise ValueError(f"LLMConfig.timeout_s must be > 0, got {self.timeout_s}")
        if self.max_new_tokens < 1:
            raise ValueError(f"LLMConfig.max_new_tokens must be >= 1, got {self.max_new_tokens}")
