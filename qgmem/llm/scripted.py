"""A deterministic backend for unit tests: replies come from a list or a function of the request."""

from __future__ import annotations

from typing import Callable

from .base import ChatBackend, ChatRequest, ChatResult, LLMError


class ScriptedBackend(ChatBackend):
    """Replies in order from `replies`, or `replies(request)`; an Exception value is raised as LLMError."""

    def __init__(self, replies: list[str | Exception] | Callable[[ChatRequest], str], model: str = "scripted"):
        super().__init__()
        self.model = model
        self._replies = replies
        self.requests: list[ChatRequest] = []

    def _complete(self, request: ChatRequest) -> ChatResult:
        self.requests.append(request)
        if callable(self._replies):
            reply: str | Exception = self._replies(request)
        else:
            if not self._replies:
                raise LLMError("scripted backend has no replies left")
            reply = self._replies.pop(0)
        if isinstance(reply, Exception):
            raise LLMError(str(reply))
        prompt = sum(len(m["content"].split()) for m in request.messages)
        return ChatResult(text=reply, prompt_tokens=prompt, completion_tokens=len(reply.split()), seconds=0.0)
