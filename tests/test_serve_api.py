"""`qgmem serve` through a real HTTP client: add, search, answer, history, forget, with results equal to
`MemoryPipeline` on the same store; two tenants that cannot see each other; the Python MemoryClient."""

from __future__ import annotations

import pytest

from qgmem.client import MemoryClient, MemoryServerError
from qgmem.serve.errors import FORBIDDEN
from qgmem.testing.hash_embedder import HashEmbedder, patch_embedder
from serve_helpers import KEYS, Server, items_of, pipeline, sessions_json, write_config, write_keys

pytestmark = pytest.mark.usefixtures("one_thread")
A, B = KEYS["alice"], KEYS["bob"]
Q = "Where does Alice work now?"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("serve")
    with Server(d / "store", write_config(d / "serve.yaml"), "--keys", str(write_keys(d / "keys.yaml"))) as srv:
        yield srv


@pytest.fixture
def hashed(monkeypatch):
    return patch_embedder(monkeypatch, HashEmbedder())


def test_add_search_answer_history_forget_equal_the_pipeline(server, tiny_conversation, hashed):
    with server.client(A) as http:
        r = http.post("/v1/memories/alice/messages", json={"sessions": sessions_json(tiny_conversation)})
        assert r.status_code == 200, r.text
        added = r.json()
        assert added["turn_ids"] == [t.id for t in tiny_conversation.turns()] and added["unit_ids"]
        got = http.post("/v1/memories/alice/search", json={"question": Q, "question_time": "2023-09-01"}).json()
        ans = http.post("/v1/memories/alice/answer", json={"question": Q}).json()
        unit = next(it["unit_id"] for it in got["items"] if "D2:1" in it["turn_ids"])
        hist = http.get("/v1/memories/alice/history", params={"unit_id": unit}).json()
    from qgmem.types import Question

    with pipeline(server.store) as pipe:  # the same store, read by the library in this process
        wm = pipe.working_memory(Question("q", Q, [], "", question_time="2023-09-01", conversation_id="alice"))
        assert items_of(got) == items_of(wm) and len(got["items"]) == 5
        want = pipe.answer(Q, namespace="alice")
        assert (ans["answer"], ans["cited_labels"], ans["raw"]) == (want.text, want.cited_labels, want.raw)
        assert items_of(ans) == items_of(want.working_memory)
        assert ans["answer"] == "Globex" and ans["cited_turn_ids"] == want.working_memory.items[0].turn_ids
        assert [s["id"] for s in hist["states"]] == [u.id for u in pipe.history(unit)]
    with server.client(A) as http:  # forget the Globex turn: nothing of it is found or stored any more
        r = http.request("DELETE", "/v1/memories/alice/turns", json={"turn_ids": ["D2:1"]})
        assert r.status_code == 200 and r.json()["remaining_turns"] == 10
        after = http.post("/v1/memories/alice/search", json={"question": Q}).json()
        assert all("D2:1" not in it["turn_ids"] and "Globex" not in it["text"] for it in after["items"])
        stored = http.get("/v1/memories/alice/messages").json()["sessions"]
        assert "Globex" not in str(stored)
    with pipeline(server.store) as pipe:
        assert items_of(after) == items_of(pipe.working_memory(Q, namespace="alice"))


def test_messages_append_are_idempotent_by_id_and_sessions_can_be_forgotten(server, hashed):
    with MemoryClient(server.url, api_key=A) as mem:
        first = mem.add([{"speaker": "Dina", "text": "I adopted a cat named Miso.", "id": "m1",
                          "time": "2024-02-03T10:00"}], namespace="alice-2", session_id="chat1")
        assert first["turn_ids"] == ["m1"] and first["session_ids"] == ["chat1"]
        again = mem.add([{"speaker": "Dina", "text": "I adopted a cat named Miso.", "id": "m1"},
                         {"speaker": "Eve", "text": "Miso is a lovely name for a cat."}],
                        namespace="alice-2", session_id="chat1")
        assert again["duplicate_ids"] == ["m1"] and again["turn_ids"] == ["chat1:2"]
        mem.add([{"speaker": "Dina", "text": "We moved to Porto in March."}], namespace="alice-2", session_id="chat2")
        sessions = mem.messages("alice-2")
        assert [[t["id"] for t in s["turns"]] for s in sessions] == [["m1", "chat1:2"], ["chat2:1"]]
        assert sessions[0]["date"] == "2024-02-03T10:00"
        wm = mem.working_memory("What is the cat called?", namespace="alice-2")
        cat = next(it for it in wm["items"] if "Miso" in it["text"])
        assert cat["unit_id"] in [u["id"] for u in mem.history(cat["unit_id"])]
        assert "alice-2" in mem.namespaces() and mem.version()["api"] == "v1"
        with server.client() as anon:  # the API's own description needs no key
            assert anon.get("/docs").status_code == 200
            assert "/v1/memories/{namespace}/search" in anon.get("/openapi.json").json()["paths"]
        assert mem.forget("alice-2", session_id="chat1")["remaining_turns"] == 1
        assert "Miso" not in str(mem.messages("alice-2"))
        assert mem.forget("alice-2")["forgotten"] == "namespace"
        assert "alice-2" not in mem.namespaces()
        with pytest.raises(MemoryServerError) as e:
            mem.working_memory("What is the cat called?", namespace="alice-2")
        assert e.value.status == 404


def _every_call(ns: str) -> list[tuple[str, str, dict | None, dict | None]]:
    q = {"question": Q}
    return [("POST", f"/v1/memories/{ns}/messages", {"messages": [{"speaker": "Mallory", "text": "hello"}]}, None),
            ("GET", f"/v1/memories/{ns}/messages", None, None),
            ("POST", f"/v1/memories/{ns}/search", q, None),
            ("POST", f"/v1/memories/{ns}/answer", q, None),
            ("GET", f"/v1/memories/{ns}/history", None, {"unit_id": f"{ns}/S1#w0/u0"}),
            ("DELETE", f"/v1/memories/{ns}/turns", {"turn_ids": ["D1:1"]}, None),
            ("DELETE", f"/v1/memories/{ns}/sessions/S1", None, None),
            ("DELETE", f"/v1/memories/{ns}", None, None)]


def test_tenants_cannot_reach_each_other_and_learn_nothing(server, tiny_conversation):
    with server.client(A) as alice, server.client(B) as bob, server.client() as anon, \
            server.client("not-a-key-at-all") as wrong:
        assert alice.post("/v1/memories/alice-iso/messages",
                          json={"sessions": sessions_json(tiny_conversation)}).status_code == 200
        assert bob.post("/v1/memories/bob-1/messages", json={"messages": [
            {"speaker": "Bob", "text": "My locker code is 4711."}]}).status_code == 200
        before = alice.get("/v1/memories/alice-iso/messages").json()
        for ns in ("alice-iso", "alice-never-made"):  # existing or not: the same refusal
            for method, path, body, params in _every_call(ns):
                r = bob.request(method, path, json=body, params=params)
                assert (r.status_code, r.json()) == (403, {"detail": FORBIDDEN, "field": None}), (method, path)
        for method, path, body, params in _every_call("bob-1"):
            r = alice.request(method, path, json=body, params=params)
            assert (r.status_code, r.json()) == (403, {"detail": FORBIDDEN, "field": None}), (method, path)
            for other in (anon, wrong):
                assert other.request(method, path, json=body, params=params).status_code == 401
        assert bob.get("/v1/namespaces").json()["namespaces"] == ["bob-1"]
        assert "bob-1" not in alice.get("/v1/namespaces").json()["namespaces"]
        assert anon.get("/v1/namespaces").status_code == 401
        assert alice.get("/v1/memories/alice-iso/messages").json() == before
        assert "4711" in str(bob.get("/v1/memories/bob-1/messages").json())


def test_mcp_over_streamable_http_keeps_tenants_apart(server):
    import anyio
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    async def tools(key: str) -> dict:
        out = {}
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http, \
                Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as mcp:
            out["names"] = sorted(t.name for t in (await mcp.list_tools()).tools)
            for name, args in (("add_memory", {"namespace": "alice-mcp", "messages": [
                    {"speaker": "Mallory", "text": "I was never here."}]}),
                    ("search_memory", {"namespace": "alice-mcp", "question": "Who was here?"}),
                    ("answer", {"namespace": "alice-mcp", "question": "Who was here?"}),
                    ("forget", {"namespace": "alice-mcp"})):
                r = await mcp.call_tool(name, args)
                out[name] = (r.is_error, r.content[0].text)
            r = await mcp.call_tool("list_namespaces", {})
            out["list"] = r.structured_content
        return out

    with server.client(A) as alice:
        alice.post("/v1/memories/alice-mcp/messages", json={"messages": [{"speaker": "Alice", "text": "I like tea."}]})
    got = anyio.run(tools, B)
    assert got["names"] == ["add_memory", "answer", "forget", "list_namespaces", "search_memory"]
    for name in ("add_memory", "search_memory", "answer", "forget"):
        assert got[name][0] and got[name][1].endswith(f"403: {FORBIDDEN}"), name
    assert "alice-mcp" not in str(got["list"])
    with server.client(A) as alice:
        assert "I like tea." in str(alice.get("/v1/memories/alice-mcp/messages").json())
        assert "Mallory" not in str(alice.get("/v1/memories/alice-mcp/messages").json())


def _bad_requests() -> list[tuple[str, str, dict, int, str | None]]:
    """(method, path, httpx keyword arguments, expected status, expected field)."""
    m = "/v1/memories/alice-bad/messages"
    one = {"speaker": "Ann", "text": "hello"}
    return [
        ("POST", m, {"json": {}}, 422, "messages"),
        ("POST", m, {"json": {"messages": []}}, 422, "messages"),
        ("POST", m, {"json": {"messages": [{"speaker": "Ann"}]}}, 422, "messages[0].text"),
        ("POST", m, {"json": {"messages": [{"speaker": "Ann", "text": 5}]}}, 422, "messages[0].text"),
        ("POST", m, {"json": {"messages": [{**one, "mood": "x"}]}}, 422, "messages[0].mood"),
        ("POST", m, {"json": [one]}, 422, "body"),
        ("POST", m, {"content": b"{not json", "headers": {"content-type": "application/json"}}, 422, "body"),
        ("POST", m, {"content": b'{"messages": [{"speaker": "A", "text": "\xff\xfe"}]}',
                     "headers": {"content-type": "application/json"}}, 422, "body"),
        ("POST", m, {"json": {"messages": [{"speaker": "Ann", "text": "x" * 300_000}]}}, 413, "body"),
        ("POST", m, {"json": {"messages": [{"speaker": "Ann", "text": "x" * 2001}]}}, 422, "messages[0].text"),
        ("POST", m, {"json": {"messages": [one] * 51}}, 422, "messages"),
        ("POST", m, {"json": {"messages": [{**one, "time": "around noon"}]}}, 422, "messages[0].time"),
        ("POST", m, {"json": {"messages": [{**one, "id": "x1"}, {**one, "id": "x1"}]}}, 422, "messages[1].id"),
        ("POST", "/v1/memories/alice/messages", {"json": {"messages": [{**one, "id": "D1:1"}]}}, 409,
         "messages[0].id"),
        ("POST", m, {"json": {"sessions": [{"id": "s", "turns": [{"id": "t", **one}]}], "session_id": "s"}}, 422,
         "session_id"),
        ("POST", m, {"json": {"sessions": [{"id": "s", "turns": []}]}}, 422, "sessions[0].turns"),
        ("POST", m, {"json": {"sessions": [{"id": "s", "date": "the 5th", "turns": [{"id": "t", **one}]}]}}, 422,
         "sessions[0].date"),
        ("POST", "/v1/memories/alice/messages", {"json": {"sessions": [{"id": "S9", "turns": [{"id": "D1:2", **one}]}]}},
         409, "sessions[0].turns[0].id"),
        ("POST", "/v1/memories/.hidden/messages", {"json": {"messages": [one]}}, 422, "namespace"),
        ("POST", "/v1/memories/%2e%2e/messages", {"json": {"messages": [one]}}, 422, "namespace"),
        ("POST", "/v1/memories/alice%2F..%2Fbob-1/messages", {"json": {"messages": [one]}}, 404, None),
        ("POST", f"/v1/memories/alice-{'x' * 200}/messages", {"json": {"messages": [one]}}, 422, "namespace"),
        ("POST", "/v1/memories/alice-none/search", {"json": {"question": Q}}, 404, "namespace"),
        ("POST", "/v1/memories/alice/search", {"json": {"question": "  "}}, 422, "question"),
        ("POST", "/v1/memories/alice/search", {"json": {}}, 422, "question"),
        ("POST", "/v1/memories/alice/answer", {"json": {"question": Q, "question_time": "soon"}}, 422, "question_time"),
        ("DELETE", "/v1/memories/alice/sessions/S77", {}, 404, "session_id"),
        ("DELETE", "/v1/memories/alice/turns", {"json": {"turn_ids": ["D9:9"]}}, 404, "turn_ids"),
        ("GET", "/v1/memories/alice/history", {"params": {"unit_id": "bob-1/S1#w0/u0"}}, 404, "unit_id"),
        ("GET", "/v1/memories/alice/search", {}, 405, None),
    ]


def test_malformed_requests_get_one_clear_4xx_and_change_nothing(server, tiny_conversation):
    from serve_helpers import store_snapshot

    with server.client(A) as http:
        if http.get("/v1/memories/alice/messages").status_code == 404:  # this test may run alone
            http.post("/v1/memories/alice/messages", json={"sessions": sessions_json(tiny_conversation)})
        before = store_snapshot(server.store)
        for method, path, kw, status, field in _bad_requests():
            r = http.request(method, path, **kw)
            body = r.json()
            assert (r.status_code, body.get("field")) == (status, field), (path, kw, r.text[:300])
            assert isinstance(body["detail"], str) and body["detail"] and "\n" not in body["detail"], r.text
        assert store_snapshot(server.store) == before
        assert http.post("/v1/memories/alice/search", json={"question": Q}).status_code == 200
