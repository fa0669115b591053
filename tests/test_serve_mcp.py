"""The MCP server over stdio, through the official SDK's client (as a desktop assistant starts it): every
tool works, answers equal MemoryPipeline on the same store, and another tenant's namespace is refused."""

from __future__ import annotations

import sys

import pytest

from qgmem.serve.errors import FORBIDDEN
from qgmem.testing.hash_embedder import HashEmbedder, patch_embedder
from serve_helpers import KEYS, ROOT, env, items_of, launch_args, pipeline, write_config, write_keys

pytestmark = pytest.mark.usefixtures("one_thread")
Q = "Where does Alice work now?"


def _messages(session) -> list[dict]:
    return [{"speaker": t.speaker, "text": t.text, "id": t.id, **({"time": session.date} if i == 0 else {})}
            for i, t in enumerate(session.turns)]


def test_mcp_stdio_tools_equal_the_pipeline_and_refuse_other_tenants(tmp_path, tiny_conversation, monkeypatch):
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    store = tmp_path / "store"
    args = launch_args(store, write_config(tmp_path / "serve.yaml"), "--keys", str(write_keys(tmp_path / "k.yaml")),
                       "--mcp", "stdio")
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT),
                                   env={**env(), "QGMEM_API_KEY": KEYS["alice"]})

    async def session() -> dict:
        out: dict = {}
        async with Client(params, read_timeout_seconds=120) as mcp:
            out["tools"] = sorted(t.name for t in (await mcp.list_tools()).tools)
            for s in tiny_conversation.sessions:
                r = await mcp.call_tool("add_memory", {"namespace": "alice", "session_id": s.id,
                                                       "messages": _messages(s)})
                assert not r.is_error, r.content[0].text
                out.setdefault("added", []).append(r.structured_content)
            out["search"] = (await mcp.call_tool("search_memory", {"namespace": "alice", "question": Q})).structured_content
            with pipeline(store) as pipe:  # the library on the same store, while the server runs
                out["pipeline"] = items_of(pipe.working_memory(Q, namespace="alice"))
            out["answer"] = (await mcp.call_tool("answer", {"namespace": "alice", "question": Q})).structured_content
            out["list"] = (await mcp.call_tool("list_namespaces", {})).structured_content
            for name, extra in (("add_memory", {"messages": [{"speaker": "Mallory", "text": "hi"}]}),
                                ("search_memory", {"question": Q}), ("answer", {"question": Q}), ("forget", {})):
                r = await mcp.call_tool(name, {"namespace": "bob-1", **extra})
                out[f"other:{name}"] = (r.is_error, r.content[0].text)
            r = await mcp.call_tool("add_memory", {"namespace": "alice", "messages": [{"speaker": "Ann", "text": 7}]})
            out["bad"] = (r.is_error, r.content[0].text)
            out["forget"] = (await mcp.call_tool("forget", {"namespace": "alice", "turn_ids": ["D2:1"]})).structured_content
            out["after"] = (await mcp.call_tool("search_memory", {"namespace": "alice", "question": Q})).structured_content
        return out

    patch_embedder(monkeypatch, HashEmbedder())
    got = anyio.run(session)
    assert items_of(got["search"]) == got["pipeline"] and len(got["pipeline"]) == 5
    assert got["tools"] == ["add_memory", "answer", "forget", "list_namespaces", "search_memory"]
    assert [a["turn_ids"] for a in got["added"]] == [[t.id for t in s.turns] for s in tiny_conversation.sessions]
    assert got["list"] == {"namespaces": ["alice"]}
    for name in ("add_memory", "search_memory", "answer", "forget"):
        assert got[f"other:{name}"][0] and got[f"other:{name}"][1].endswith(f"403: {FORBIDDEN}"), name
    assert got["bad"][0] and "messages" in got["bad"][1] and "text" in got["bad"][1]
    assert got["forget"]["remaining_turns"] == 10
    assert all("D2:1" not in it["turn_ids"] for it in got["after"]["items"])
    with pipeline(store) as pipe:
        assert items_of(got["after"]) == items_of(pipe.working_memory(Q, namespace="alice"))
        assert pipe.namespaces() == ["alice"] and "Mallory" not in str(pipe.store.get_conversation("alice"))
    first = got["search"]
    assert any("D2:1" in it["turn_ids"] for it in first["items"])  # the Globex turn was found before it was forgotten
    assert got["answer"]["answer"] == "Globex" and got["answer"]["cited_turn_ids"] == first["items"][0]["turn_ids"]
