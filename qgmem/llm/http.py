"""OpenAI-compatible chat backend (vLLM, OpenAI, llama.cpp server, ...) on the standard library.

Why no `openai` package: one POST per call is all we need, and owning the retry loop lets us
retry exactly what is transient (429, 5xx, timeouts, dropped or garbled connections; honouring
Retry-After) and fail fast on everything else (400/401/404: a bug or a bad key).

`timeout_s` is a deadline for a whole attempt (connect, wait, read), not per socket read, so a
reply that drips in slowly is cut off like a silent one. After `max_consecutive_failures` calls
in a row have failed, the circuit opens: later calls fail at once with a message that says so,
instead of retrying a dead server once for every remaining request.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from .base import ChatBackend, ChatRequest, ChatResult, LLMError

RETRY_STATUS = {408, 409, 425, 429}


def _excerpt(body: str | bytes, n: int = 300) -> str:
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    body = " ".join(body.split())
    return body if len(body) <= n else body[:n] + "..."


def _retry_after_s(value: str | None) -> float | None:
    """Retry-After is either seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _read_by(resp: Any, deadline: float, timeout_s: float) -> bytes:
    """The whole body, or TimeoutError once `deadline` (time.monotonic) has passed."""
    if not hasattr(resp, "read1"):
        return resp.read()
    sock = getattr(getattr(getattr(resp, "fp", None), "raw", None), "_sock", None)
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"reply not complete within {timeout_s}s")
        if sock is not None:
            sock.settimeout(left)
        chunk = resp.read1(65536)
        if not chunk:
            body = b"".join(chunks)
            missing = getattr(resp, "length", None)
            if isinstance(missing, int) and missing > 0:  # read1 returns b"" where read would raise
                raise http.client.IncompleteRead(body, missing)
            return body
        chunks.append(chunk)


class OpenAIChatBackend(ChatBackend):
    """POST {base_url}/chat/completions with bounded concurrency and retries.

    `base_url` includes the API prefix, e.g. "http://localhost:8000/v1". `extra_body` is merged
    into every request (e.g. {"seed": 0} or vLLM's {"top_k": 1}).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        max_concurrency: int = 8,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 30.0,
        extra_body: dict[str, Any] | None = None,
        max_retry_after_s: float = 300.0,
        max_consecutive_failures: int = 8,
    ):
        super().__init__()
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"OpenAIChatBackend: base_url must start with http:// or https://, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.max_concurrency = max(1, max_concurrency)
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.extra_body = dict(extra_body or {})
        self.max_retry_after_s = max_retry_after_s  # a server's Retry-After is honoured up to this
        self.max_consecutive_failures = max_consecutive_failures  # 0 = no circuit breaker
        self._consecutive_failures = 0
        self._slots = threading.BoundedSemaphore(self.max_concurrency)
        self._stats_lock = threading.Lock()
        self.retries = 0  # total retried attempts, for reports
        self.sleep = time.sleep  # replaceable in tests to observe backoff waits

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.json_mode:
            body["response_format"] = {"type": "json_object"}
        if request.stop:
            body["stop"] = list(request.stop)
        body.update(self.extra_body)
        return body

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after_s)
        wait = self.backoff_base_s * (2**attempt)
        return min(self.backoff_max_s, wait) * (0.5 + random.random())  # jitter: 0.5x..1.5x

    def _post(self, data: bytes) -> tuple[int, bytes, dict[str, str]]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        deadline = time.monotonic() + self.timeout_s
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                return resp.status, _read_by(resp, deadline, self.timeout_s), dict(resp.headers.items())
        except urllib.error.HTTPError as e:
            body = _read_by(e, deadline, self.timeout_s) if e.fp is not None else b""
            return e.code, body, dict(e.headers.items()) if e.headers else {}

    def _complete(self, request: ChatRequest) -> ChatResult:
        if self.max_consecutive_failures and self._consecutive_failures >= self.max_consecutive_failures:
            raise LLMError(f"{self.url} model={self.model}: circuit open after {self._consecutive_failures} "
                           "consecutive failed calls; not calling again (is the server up?)")
        try:
            result = self._attempts(request)
        except LLMError:
            with self._stats_lock:
                self._consecutive_failures += 1
            raise
        with self._stats_lock:
            self._consecutive_failures = 0
        return result

    def _attempts(self, request: ChatRequest) -> ChatResult:
        data = json.dumps(self.payload(request)).encode()
        last = ""
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            retry_after: float | None = None
            t0 = time.perf_counter()
            try:
                with self._slots:
                    status, body, headers = self._post(data)
            except TimeoutError as e:
                last = f"timeout after {self.timeout_s}s ({e})"
            except http.client.HTTPException as e:  # IncompleteRead, BadStatusLine, RemoteDisconnected, ...
                last = f"broken HTTP exchange: {type(e).__name__}: {_excerpt(str(e))}"
            except (urllib.error.URLError, ConnectionError, OSError) as e:
                reason = getattr(e, "reason", e)
                if isinstance(reason, (socket.timeout, TimeoutError)):
                    last = f"timeout after {self.timeout_s}s ({reason})"
                else:
                    last = f"connection error: {reason}"
            else:
                if status == 200:
                    try:
                        return self._parse(body, time.perf_counter() - t0)
                    except (ValueError, KeyError, IndexError, TypeError) as e:
                        last = f"malformed response ({e}): {_excerpt(body)}"
                else:
                    last = f"HTTP {status}: {_excerpt(body)}"
                    if not (status in RETRY_STATUS or status >= 500):
                        raise LLMError(f"{self.url} model={self.model}: {last} (not retried)")
                    lower = {k.lower(): v for k, v in headers.items()}
                    retry_after = _retry_after_s(lower.get("retry-after"))
            if attempt + 1 < attempts:
                with self._stats_lock:
                    self.retries += 1
                self.sleep(self._backoff(attempt, retry_after))
        raise LLMError(f"{self.url} model={self.model}: failed after {attempts} attempt(s); last: {last}")

    def _parse(self, body: bytes, seconds: float) -> ChatResult:
        obj = json.loads(body)
        choice = obj["choices"][0]
        text = choice["message"].get("content") or ""
        usage = obj.get("usage") or {}
        return ChatResult(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            seconds=seconds,
            finish_reason=choice.get("finish_reason"),
        )
