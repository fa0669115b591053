"""LLM backends behind one chat interface (see base.ChatBackend)."""

from .base import ChatBackend, ChatRequest, ChatResult, LLMError, Usage
from .scripted import ScriptedBackend

__all__ = ["ChatBackend", "ChatRequest", "ChatResult", "LLMError", "Usage", "ScriptedBackend"]
