"""The HTTP API (FastAPI; OpenAPI page at /docs) over a `MemoryService`, with the MCP server's
streamable-HTTP endpoint at /mcp in the same process (so both share one loaded pipeline).

Every refusal is JSON `{"detail": "<one line>", "field": "<the field>"}` with its status; a body over
`limits.max_body_bytes` is refused with 413 before it is parsed; a server without API keys answers
loopback clients only. Routes are plain functions, run in the server's thread pool, so searches run
in parallel while the service's locks order the writes.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

from fastapi import Body, Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from qgmem import __version__
from qgmem.serve.config import LOOPBACK
from qgmem.serve.errors import ServeError
from qgmem.serve.schemas import (AddReply, AddRequest, AnswerReply, ForgetReply, ForgetTurns, HistoryReply,
                                 MessagesReply, NamespacesReply, SearchReply, SearchRequest)
from qgmem.serve.service import MemoryService
from qgmem.serve.tenants import ApiKey, presented_key

NS = Path(description="the namespace: one user or agent (letters, digits, _ . : @ -)")


def _error(status: int, detail: str, field: str | None = None, retry_after: int | None = None) -> JSONResponse:
    headers = {"Retry-After": str(retry_after)} if retry_after else None
    return JSONResponse({"detail": detail, "field": field}, status_code=status, headers=headers)


class BodyLimit:
    """ASGI middleware: read the whole body (at most `max_bytes`) before the app sees it; 413 above,
    422 when it is not UTF-8; 403 for a non-loopback client of a server without keys."""

    def __init__(self, app: Any, max_bytes: int, loopback_only: bool):
        self.app, self.max_bytes, self.loopback_only = app, max_bytes, loopback_only

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = (scope.get("client") or ("",))[0]
        if self.loopback_only and client not in LOOPBACK:
            await _error(403, "this server has no API keys and serves loopback clients only")(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        too_big = _error(413, f"request body over {self.max_bytes:,} bytes (limits.max_body_bytes)", "body")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await too_big(scope, receive, send)
            return
        chunks, size, more = [], 0, True
        while more:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            chunks.append(msg.get("body", b""))
            size += len(chunks[-1])
            more = msg.get("more_body", False)
            if size > self.max_bytes:
                await too_big(scope, receive, send)
                return
        body, sent = b"".join(chunks), False
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as e:
            await _error(422, f"body is not UTF-8 (byte {e.start})", "body")(scope, receive, send)
            return

        async def replay() -> dict:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def _field(loc: tuple | list) -> str:
    """("body", "messages", 0, "text") -> "messages[0].text"."""
    out = ""
    for part in list(loc)[1:] if loc and loc[0] in ("body", "query", "path") else list(loc):
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "body"


def _validation(_req: Request, exc: RequestValidationError) -> JSONResponse:
    err = exc.errors()[0]
    if err.get("type") == "json_invalid":
        return _error(422, f"body is not valid JSON ({err.get('ctx', {}).get('error', 'parse error')})", "body")
    field = _field(err.get("loc", ()))
    msg = err.get("msg", "invalid")
    if err.get("type") == "missing":
        msg = "required field is missing"
    elif err.get("type") == "extra_forbidden":
        msg = "unknown field"
    return _error(422, f"{field}: {msg}", field)


def create_app(service: MemoryService, mcp: Any = None, host: str = "127.0.0.1") -> FastAPI:
    """The API; with `mcp` (an MCPServer), its streamable-HTTP endpoint is served at /mcp (`host`: the
    address the server binds, which the MCP transport checks Host headers against on loopback)."""
    mcp_app = mcp.streamable_http_app(streamable_http_path="/mcp", host=host) if mcp is not None else None

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        if mcp_app is None:
            yield
        else:
            async with mcp.session_manager.run():
                yield

    app = FastAPI(title="qgmem memory server", version=__version__, lifespan=lifespan,
                  description="Long-term memory for agents: one namespace per user or agent. "
                              "Send `Authorization: Bearer KEY` when the server has keys.")
    app.add_exception_handler(RequestValidationError, _validation)

    @app.exception_handler(ServeError)
    def _serve_error(_req: Request, exc: ServeError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.field, exc.retry_after)

    @app.exception_handler(StarletteHTTPException)
    def _http_error(_req: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail))

    def who(request: Request) -> ApiKey | None:
        return service.who(presented_key(request.headers))

    Who = Depends(who)

    @app.post("/v1/memories/{namespace}/messages", response_model=AddReply, tags=["memories"])
    def add(req: AddRequest, namespace: str = NS, key: ApiKey | None = Who) -> dict:
        """Append messages (or whole sessions); returns once the new windows are stored and indexed."""
        return service.add(key, namespace, req.messages, req.session_id, req.sessions)

    @app.get("/v1/memories/{namespace}/messages", response_model=MessagesReply, tags=["memories"])
    def messages(namespace: str = NS, key: ApiKey | None = Who) -> dict:
        """The stored sessions and messages of a namespace."""
        return service.messages(key, namespace)

    @app.post("/v1/memories/{namespace}/search", response_model=SearchReply, tags=["memories"])
    def search(req: SearchRequest, namespace: str = NS, key: ApiKey | None = Who) -> dict:
        """The working memory for a question: items with text, turn ids, session, time, trajectory, scores."""
        return service.search(key, namespace, req.question, req.question_time)

    @app.post("/v1/memories/{namespace}/answer", response_model=AnswerReply, tags=["memories"])
    def answer(req: SearchRequest, namespace: str = NS, key: ApiKey | None = Who) -> dict:
        """An answer with the turn ids it cites, from the configured chat backend or checkpoint."""
        return service.answer(key, namespace, req.question, req.question_time)

    @app.get("/v1/memories/{namespace}/history", response_model=HistoryReply, tags=["memories"])
    def history(namespace: str = NS, unit_id: str = Query(..., description="a unit id from search"),
                key: ApiKey | None = Who) -> dict:
        """Every state of a unit's trace, in memory-time order."""
        return service.history(key, namespace, unit_id)

    @app.delete("/v1/memories/{namespace}", response_model=ForgetReply, tags=["forget"])
    def forget_namespace(namespace: str = NS, key: ApiKey | None = Who) -> dict:
        """Forget a namespace and everything derived from it."""
        return service.forget(key, namespace)

    @app.delete("/v1/memories/{namespace}/sessions/{session_id}", response_model=ForgetReply, tags=["forget"])
    def forget_session(session_id: str, namespace: str = NS, key: ApiKey | None = Who) -> dict:
        """Forget one session; the memory is rebuilt from what remains."""
        return service.forget(key, namespace, session_id=session_id)

    @app.delete("/v1/memories/{namespace}/turns", response_model=ForgetReply, tags=["forget"])
    def forget_turns(req: ForgetTurns = Body(...), namespace: str = NS, key: ApiKey | None = Who) -> dict:
        """Forget some messages (by id); the windows that held them are extracted again without them."""
        return service.forget(key, namespace, turn_ids=req.turn_ids)

    @app.get("/v1/namespaces", response_model=NamespacesReply, tags=["server"])
    def namespaces(key: ApiKey | None = Who) -> dict:
        """The namespaces this key may use that hold memories."""
        return {"namespaces": service.namespaces(key)}

    @app.get("/v1/health", tags=["server"])
    def health() -> dict:
        return service.health()

    @app.get("/v1/version", tags=["server"])
    def version() -> dict:
        return service.version()

    if mcp_app is not None:
        app.router.routes.extend(mcp_app.routes)
    app.add_middleware(BodyLimit, max_bytes=service.limits.max_body_bytes, loopback_only=service.tenants.open)
    return app
