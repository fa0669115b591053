"""Build the backend a config asks for, wrapped in the response cache when enabled."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..paths import cache_dir
from .base import ChatBackend, ChatRequest
from .config import LLMConfig

DEFAULT_OPENAI_URL = "https://api.openai.com/v1"


def make_backend(
    cfg: LLMConfig,
    replies: list[str | Exception] | Callable[[ChatRequest], str] | None = None,
) -> ChatBackend:
    """Return a ready backend; `replies` is only for backend="scripted" (tests and dry runs).

    Every backend accounts calls/tokens/seconds per phase in `.usage`; with `cfg.cache` the
    returned object is a CachedBackend whose usage separates cached from new calls.
    """
    inner: ChatBackend
    if cfg.backend == "scripted":
        from .scripted import ScriptedBackend

        if replies is None:
            raise ValueError("LLMConfig.backend='scripted' needs `replies` (a list or a function of the request)")
        inner = ScriptedBackend(replies, model=cfg.model)
    elif cfg.backend == "openai":
        from .http import OpenAIChatBackend

        base_url = cfg.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_URL
        inner = OpenAIChatBackend(
            base_url,
            cfg.model,
            api_key=os.environ.get(cfg.api_key_env) or None,
            timeout_s=cfg.timeout_s,
            max_retries=cfg.max_retries,
            max_concurrency=cfg.max_concurrency,
            backoff_base_s=cfg.backoff_base_s,
            backoff_max_s=cfg.backoff_max_s,
            extra_body={**cfg.extra_body, **({"chat_template_kwargs": dict(cfg.chat_template_kwargs)}
                                             if cfg.chat_template_kwargs else {})},
        )
    elif cfg.backend == "hf":
        from .hf import HFChatBackend, local_model_path

        inner = HFChatBackend(
            local_model_path(cfg.model),
            device=cfg.device,
            dtype=cfg.dtype,
            max_new_tokens=cfg.max_new_tokens,
            batch_size=cfg.batch_size,
            chat_template_kwargs=cfg.chat_template_kwargs,
        )
    else:  # LLMConfig.__post_init__ already rejects this
        raise ValueError(f"unknown LLM backend {cfg.backend!r}")
    if not cfg.cache:
        return inner
    from .cache import CachedBackend

    root = Path(cfg.cache_dir).expanduser() if cfg.cache_dir else cache_dir() / "llm"
    return CachedBackend(inner, root, cache_sampled=cfg.cache_sampled)
