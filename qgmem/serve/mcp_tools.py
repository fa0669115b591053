"""The MCP server (official `mcp` SDK): the service's operations as tools an MCP client can call.

Tools: add_memory, search_memory, answer, forget, list_namespaces. Over streamable HTTP (/mcp of
`qgmem serve`) the key comes from the request's `Authorization: Bearer KEY` header; over stdio
(`qgmem serve --mcp stdio`, started by the client itself) from `$QGMEM_API_KEY`. A refusal is an
error result with the same one line the HTTP API sends, e.g. "403: this key may not use that namespace".
"""

from __future__ import annotations

import os
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from qgmem.serve.errors import ServeError
from qgmem.serve.schemas import Message
from qgmem.serve.service import MemoryService
from qgmem.serve.tenants import ApiKey, presented_key

ENV_KEY = "QGMEM_API_KEY"  # the key a stdio server acts with

INSTRUCTIONS = ("Long-term memory, one namespace per user or agent. add_memory stores messages; search_memory "
                "returns what is remembered about a question (with turn ids, times and earlier states); answer "
                "answers from it; forget removes a namespace, a session or messages for good.")


def make_mcp(service: MemoryService, stdio: bool = False) -> MCPServer:
    mcp = MCPServer("qgmem", instructions=INSTRUCTIONS)

    def call(ctx: Context | None, fn: Any, *args: Any, **kw: Any) -> Any:
        try:
            headers = None if stdio or ctx is None else ctx.headers
            key = os.environ.get(ENV_KEY) if stdio else presented_key(headers)
            who: ApiKey | None = service.who(key)
            return fn(who, *args, **kw)
        except ServeError as e:
            raise ToolError(e.line()) from None

    @mcp.tool()
    def add_memory(namespace: str, messages: list[Message], session_id: str | None = None,
                   ctx: Context | None = None) -> dict[str, Any]:
        """Store messages (speaker, text, optional ISO time and id) in a namespace; without session_id they
        form a new session. Returns the stored message ids and the new memory unit ids."""
        return call(ctx, service.add, namespace, messages, session_id)

    @mcp.tool()
    def search_memory(namespace: str, question: str, question_time: str | None = None,
                      ctx: Context | None = None) -> dict[str, Any]:
        """What the namespace remembers about a question: items with text, turn ids, session, time,
        trajectory (earlier and later states) and score."""
        return call(ctx, service.search, namespace, question, question_time)

    @mcp.tool()
    def answer(namespace: str, question: str, question_time: str | None = None,
               ctx: Context | None = None) -> dict[str, Any]:
        """Answer a question from the namespace's memory; cites the turn ids it used."""
        return call(ctx, service.answer, namespace, question, question_time)

    @mcp.tool()
    def forget(namespace: str, session_id: str | None = None, turn_ids: list[str] | None = None,
               ctx: Context | None = None) -> dict[str, Any]:
        """Forget a whole namespace, or one session, or some messages (turn ids), with everything
        derived from them."""
        return call(ctx, service.forget, namespace, session_id, turn_ids)

    @mcp.tool()
    def list_namespaces(ctx: Context | None = None) -> dict[str, Any]:
        """The namespaces this key may use that hold memories."""
        return {"namespaces": call(ctx, service.namespaces)}

    return mcp
