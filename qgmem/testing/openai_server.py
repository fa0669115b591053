"""A local OpenAI-compatible `/v1/chat/completions` server for tests.

    with OpenAIServer(lambda req: "hello") as srv:
        backend = OpenAIChatBackend(srv.base_url, "test-model")

The reply source is a function of the request JSON, a list of scripted replies (used in order),
or a real ChatBackend (`OpenAIServer.from_backend(HFChatBackend(...))`). A reply is a string
(wrapped in a proper chat.completion with usage counts), a dict (sent as the whole JSON body),
`(status, body)` or `(status, body, headers)` for errors, or a `Fault` that breaks the HTTP exchange
itself (a reply dripped byte by byte, a body cut short, a garbage status line). Handlers may sleep to
trigger client timeouts. Every request is recorded in `.requests`; `.max_in_flight` is the peak concurrency seen.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal



@dataclass
class Fault:
    """A reply that breaks the transport, as flaky proxies and dying servers do.

    kind: "drip" sends a normal completion of `text` one byte every `interval_s` seconds;
    "truncate" promises the whole body in Content-Length, sends half and closes the connection
    (the client sees IncompleteRead); "bad-status" answers with a line that is not HTTP at all
    (BadStatusLine).
    """

    kind: Literal["drip", "truncate", "bad-status"]
    text: str = "ok"
    interval_s: float = 0.05


Reply = str | dict | tuple | Fault
Handler = Callable[[dict], Reply]


def _count_tokens(text: str) -> int:
    return len(text.split())


class OpenAIServer:
    def __init__(self, handler: Handler | list[Reply], model: str = "test-model", delay_s: float = 0.0):
        self.model = model
        self.delay_s = delay_s
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        if callable(handler):
            self._handler: Handler = handler
        else:
            queue = list(handler)

            def scripted(_req: dict) -> Reply:
                with self._lock:
                    if not queue:
                        return 500, json.dumps({"error": {"message": "test server: no scripted replies left"}})
                    return queue.pop(0)

            self._handler = scripted
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def from_backend(cls, backend: Any, model: str | None = None) -> OpenAIServer:
        """Serve a real ChatBackend (e.g. a local HFChatBackend) with its exact token counts."""

        def handle(req: dict) -> Reply:
            fmt = req.get("response_format") or {}
            res = backend.chat(
                req["messages"],
                temperature=float(req.get("temperature", 0.0)),
                max_tokens=int(req.get("max_tokens") or 512),
                json_mode=fmt.get("type") == "json_object",
                stop=req.get("stop"),
            )
            return _completion(req.get("model", model or "served"), res.text, res.prompt_tokens,
                               res.completion_tokens, res.finish_reason or "stop")

        return cls(handle, model=model or getattr(backend, "model", "served"))

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started (use `with OpenAIServer(...) as srv`)"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> OpenAIServer:
        server = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def _send(self, status: int, body: str, headers: dict[str, str] | None = None) -> None:
                data = body.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, str(v))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": [{"id": server.model, "object": "model"}]}))
                else:
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}))
                    return
                try:
                    req = json.loads(raw)
                except json.JSONDecodeError as e:
                    self._send(400, json.dumps({"error": {"message": f"bad JSON body: {e}"}}))
                    return
                with server._lock:
                    server.requests.append(req)
                    server.headers.append(dict(self.headers.items()))
                    server._in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server._in_flight)
                try:
                    if server.delay_s:
                        time.sleep(server.delay_s)
                    try:
                        reply = server._handler(req)
                    except Exception as e:  # noqa: BLE001 - a failing handler is a 500, as on a real server
                        reply = (500, json.dumps({"error": {"message": f"{type(e).__name__}: {e}"}}))
                    if not isinstance(reply, Fault):
                        status, body, headers = _to_response(req, reply, server.model)
                finally:
                    with server._lock:
                        server._in_flight -= 1
                if isinstance(reply, Fault):
                    self._fault(req, reply)
                else:
                    self._send(status, body, headers)

            def _fault(self, req: dict, fault: Fault) -> None:
                _, body, _ = _to_response(req, fault.text, server.model)
                data = body.encode()
                try:
                    if fault.kind == "bad-status":
                        self.wfile.write(b"NOT-HTTP garbage\r\n\r\n")
                    else:
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        if fault.kind == "truncate":
                            self.wfile.write(data[: len(data) // 2])
                        else:  # drip
                            for i in range(len(data)):
                                self.wfile.write(data[i:i + 1])
                                self.wfile.flush()
                                time.sleep(fault.interval_s)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="openai-test-server", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def _completion(model: str, text: str, prompt_tokens: int, completion_tokens: int, finish: str = "stop") -> dict:
    return {
        "id": f"chatcmpl-test-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _to_response(req: dict, reply: Reply, model: str) -> tuple[int, str, dict[str, str]]:
    if isinstance(reply, str):
        prompt = sum(_count_tokens(str(m.get("content", ""))) for m in req.get("messages", []))
        body = _completion(req.get("model", model), reply, prompt, _count_tokens(reply))
        return 200, json.dumps(body), {}
    if isinstance(reply, dict):
        return 200, json.dumps(reply), {}
    if isinstance(reply, tuple) and len(reply) in (2, 3):
        status, body = reply[0], reply[1]
        headers = reply[2] if len(reply) == 3 else {}
        if not isinstance(body, str):
            body = json.dumps(body)
        return int(status), body, dict(headers)
    raise TypeError(f"test server: unsupported reply {reply!r}")
