"""LLM backends behind one chat interface (see base.ChatBackend).

`make_backend(LLMConfig(...))` gives a cached, accounted backend: local transformers ("hf"),
any OpenAI-compatible HTTP server ("openai", e.g. vLLM) or scripted replies ("scripted").
Heavy modules (torch, transformers) are imported only when an "hf" backend is built.
"""

from __future__ import annotations

from typing import Any

from .base import ChatBackend, ChatRequest, ChatResult, LLMError, Usage
from .config import LLMConfig
from .factory import make_backend
from .jsonfix import JSONReplyError, chat_json, parse_json_lenient
from .scripted import ScriptedBackend

__all__ = [
    "ChatBackend",
    "ChatRequest",
    "ChatResult",
    "JSONReplyError",
    "LLMConfig",
    "LLMError",
    "ScriptedBackend",
    "Usage",
    "chat_json",
    "local_model_path",
    "make_backend",
    "parse_json_lenient",
]


def local_model_path(name: str) -> str:
    """See qgmem.llm.hf.local_model_path (imported lazily: it needs transformers)."""
    from .hf import local_model_path as _impl

    return _impl(name)


def __getattr__(name: str) -> Any:
    if name == "OpenAIChatBackend":
        from .http import OpenAIChatBackend

        return OpenAIChatBackend
    if name == "HFChatBackend":
        from .hf import HFChatBackend

        return HFChatBackend
    if name == "CachedBackend":
        from .cache import CachedBackend

        return CachedBackend
    raise AttributeError(name)
