"""The server under load and its edges: answers through a local OpenAI-compatible server equal the
pipeline's, readers run together, a busy namespace or a full server answers 503 with Retry-After and
writes nothing, other namespaces keep going, a failed write is undone, keys and loopback rules hold."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from qgmem.testing.hash_embedder import HashEmbedder, patch_embedder
from qgmem.testing.openai_server import OpenAIServer
from serve_helpers import (ROOT, InProcessServer, env, items_of, pipeline, sessions_json, store_snapshot,
                           wait_for)

pytestmark = pytest.mark.usefixtures("one_thread")
Q = "Where does Alice work now?"


@pytest.fixture(autouse=True)
def hashed(monkeypatch):
    return patch_embedder(monkeypatch, HashEmbedder())


def _openai(srv: OpenAIServer) -> dict:
    return {"backend": "openai", "base_url": srv.base_url, "model": "test-model", "cache": False, "max_retries": 0}


def test_answer_through_an_openai_compatible_server_equals_the_pipeline(tmp_path, tiny_conversation):
    from qgmem.llm import LLMConfig, make_backend

    reply = lambda req: "The newest state is [M1] (see [M7]).\nAnswer: Globex"  # noqa: E731
    with OpenAIServer(reply) as llm_srv:
        with InProcessServer(tmp_path / "store", llm=_openai(llm_srv)) as srv, srv.client() as http:
            assert http.post("/v1/memories/c1/messages", json={"sessions": sessions_json(tiny_conversation)}
                             ).status_code == 200
            got = http.post("/v1/memories/c1/answer", json={"question": Q}).json()
        with pipeline(tmp_path / "store", llm=make_backend(LLMConfig(**_openai(llm_srv)))) as pipe:
            want = pipe.answer(Q, namespace="c1")
        served, direct = llm_srv.requests[-2:]
    assert (got["answer"], got["cited_labels"], got["invalid_labels"]) == ("Globex", ["M1"], ["M7"])
    assert (got["answer"], got["cited_labels"], got["raw"]) == (want.text, want.cited_labels, want.raw)
    assert items_of(got) == items_of(want.working_memory)
    assert served["messages"] == direct["messages"]  # the server sent the pipeline's own prompt


def test_a_failing_answer_backend_is_502_and_search_still_works(tmp_path, tiny_conversation):
    with OpenAIServer(lambda req: (500, {"error": {"message": "model overloaded"}})) as llm_srv, \
            InProcessServer(tmp_path / "store", llm=_openai(llm_srv)) as srv, srv.client() as http:
        http.post("/v1/memories/c1/messages", json={"sessions": sessions_json(tiny_conversation)})
        r = http.post("/v1/memories/c1/answer", json={"question": Q})
        assert r.status_code == 502 and "answer backend" in r.json()["detail"]
        assert http.post("/v1/memories/c1/search", json={"question": Q}).status_code == 200


def test_busy_namespace_or_full_server_is_503_with_retry_after_and_writes_nothing(tmp_path, tiny_conversation):
    limits = {"max_in_flight": 3, "lock_timeout_s": 0.5, "retry_after_s": 2}
    release = threading.Event()  # the LLM answers only when the test says so: the answers stay in flight till then
    with OpenAIServer(lambda req: "Answer: Globex" if release.wait(60) else "", ) as llm_srv, \
            InProcessServer(tmp_path / "store", llm=_openai(llm_srv), limits=limits) as srv, srv.client() as http:
        http.post("/v1/memories/c1/messages", json={"sessions": sessions_json(tiny_conversation)})
        before = store_snapshot(tmp_path / "store")
        slow = [threading.Thread(target=http.post, args=("/v1/memories/c1/answer",), kwargs={"json": {"question": Q}})
                for _ in range(2)]
        for t in slow:
            t.start()
        # two readers of c1 at once: both answers are with the LLM together
        wait_for(lambda: srv.service.gate.in_flight == 2 and llm_srv.max_in_flight == 2, what="two readers")
        t0 = time.monotonic()
        r = http.post("/v1/memories/c1/messages", json={"messages": [{"speaker": "Alice", "text": "I quit Globex."}]})
        assert r.status_code == 503 and r.headers["Retry-After"] == "2" and "c1" in r.json()["detail"]
        assert time.monotonic() - t0 < 30  # refused after lock_timeout_s, while the readers still wait
        assert store_snapshot(tmp_path / "store") == before
        other = http.post("/v1/memories/c2/messages", json={"messages": [{"speaker": "Bob", "text": "I moved to Oslo."}]})
        assert other.status_code == 200  # another namespace is written while c1 is read
        hold = threading.Thread(target=http.post, args=("/v1/memories/c1/answer",), kwargs={"json": {"question": Q}})
        hold.start()
        wait_for(lambda: srv.service.gate.in_flight == 3, what="three requests in flight")
        full = http.post("/v1/memories/c2/search", json={"question": "Where does Bob live?"})
        assert full.status_code == 503 and full.headers["Retry-After"] == "2" and "in flight" in full.json()["detail"]
        release.set()
        for t in [*slow, hold]:
            t.join()
        assert http.post("/v1/memories/c1/messages", json={"messages": [{"speaker": "Alice", "text": "I quit Globex."}]}
                         ).status_code == 200
        assert srv.service.gate.refused == 2


def test_writes_to_one_namespace_are_serialised_none_lost(tmp_path):
    with InProcessServer(tmp_path / "store") as srv:
        def add(i: int) -> None:
            with srv.client() as http:
                r = http.post("/v1/memories/u/messages", json={"session_id": f"s{i}", "messages": [
                    {"speaker": "Ann", "text": f"My favourite number is {i}.", "id": f"m{i}"}]})
                assert r.status_code == 200, r.text
        threads = [threading.Thread(target=add, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with srv.client() as http:
            sessions = http.get("/v1/memories/u/messages").json()["sessions"]
    assert sorted(t["id"] for s in sessions for t in s["turns"]) == [f"m{i}" for i in range(6)]


def test_a_write_that_fails_part_way_is_undone(tmp_path, tiny_conversation, monkeypatch):
    with InProcessServer(tmp_path / "store") as srv, srv.client() as http:
        http.post("/v1/memories/c1/messages", json={"sessions": sessions_json(tiny_conversation)})
        store = srv.pipe.store
        before = (store.get_conversation("c1"), [(u.id, u.text) for u in store.units("c1")])
        real = srv.pipe.retriever.index_units
        calls = []

        def fail_once(*a, **kw):
            calls.append(1)
            if len(calls) == 1:
                raise RuntimeError("disk on fire")
            return real(*a, **kw)

        monkeypatch.setattr(srv.pipe.retriever, "index_units", fail_once)
        r = http.post("/v1/memories/c1/messages", json={"session_id": "S2", "messages": [
            {"speaker": "Alice", "text": "My secret pin is 8412."}]})
        assert r.status_code == 500 and "changed nothing" in r.json()["detail"]
        assert (store.get_conversation("c1"), [(u.id, u.text) for u in store.units("c1")]) == before
        assert b"8412" not in (tmp_path / "store" / "store.sqlite").read_bytes()
        assert http.post("/v1/memories/c1/search", json={"question": "What is the pin?"}).status_code == 200


def test_keys_file_and_environment(tmp_path, monkeypatch):
    from qgmem.config import ConfigError
    from qgmem.serve.errors import ServeError
    from qgmem.serve.tenants import Tenants, load_keys_file

    bad = tmp_path / "k.yaml"
    for text, words in (("keys: []", "non-empty list"), ("keys: [{tenant: a, key: short, namespaces: [a]}]", "8"),
                        ("keys: [{tenant: a, key: long-enough-key, namespaces: ['../x']}]", "pattern"),
                        ("keys: [{tenant: a, key: long-enough-key, sha256: ab, namespaces: [a]}]", "exactly one")):
        bad.write_text(text)
        with pytest.raises(ConfigError, match=words):
            load_keys_file(bad)
    monkeypatch.setenv("QGMEM_API_KEYS", "team-key-0001=team-*;solo-key-0002=solo")
    t = Tenants.load(None)
    who = t.identify("team-key-0001")
    t.check(who, "team-7")
    with pytest.raises(ServeError) as e:
        t.check(who, "solo")
    assert e.value.status == 403
    with pytest.raises(ServeError) as e:
        t.identify("team-key-0002")
    assert e.value.status == 401
    assert t.visible(t.identify("solo-key-0002"), ["solo", "team-1"]) == ["solo"]


def test_without_keys_only_loopback(tmp_path):
    import anyio
    import httpx

    r = subprocess.run([sys.executable, "-m", "qgmem.cli", "serve", "--store", str(tmp_path / "s"), "--host",
                        "0.0.0.0"], capture_output=True, text=True, env=env(), cwd=ROOT, timeout=120)
    assert r.returncode == 2 and "loopback" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s").exists()
    with InProcessServer(tmp_path / "store") as srv:  # an open server turns a remote client away
        from qgmem.serve.http import create_app

        async def remote() -> httpx.Response:
            app = create_app(srv.service)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app, client=("192.0.2.7", 5000)),
                                         base_url="http://memory") as c:
                return await c.get("/v1/namespaces")
        resp = anyio.run(remote)
    assert resp.status_code == 403 and "loopback" in resp.json()["detail"]


def test_a_namespace_being_built_by_another_process_is_409_and_nothing_is_written(tmp_path, tiny_conversation):
    from qgmem.locking import FileLock

    with InProcessServer(tmp_path / "store") as srv, srv.client() as http:
        http.post("/v1/memories/c1/messages", json={"sessions": sessions_json(tiny_conversation)})
        before = store_snapshot(tmp_path / "store")
        add = {"messages": [{"speaker": "Alice", "text": "I quit Globex."}]}
        with FileLock(tmp_path / "store" / "writer.lock"):  # what `qgmem build` on this store holds while it runs
            r = http.post("/v1/memories/c1/messages", json=add)
            assert r.status_code == 409 and r.json()["field"] == "namespace" and "another process" in r.json()["detail"]
            assert http.post("/v1/memories/c1/search", json={"question": Q}).status_code == 200  # reads go on
        assert store_snapshot(tmp_path / "store") == before
        assert http.post("/v1/memories/c1/messages", json=add).status_code == 200


def test_a_graph_token_checkpoint_answers_as_the_pipeline_does(tmp_path, tiny_conversation):
    from qgmem.config import to_dict
    from qgmem.graph.local_graph import GraphConfig
    from qgmem.model.encoder import EncoderConfig
    from qgmem.model.graph_token_lm import GraphTokenLM
    from qgmem.pipeline import MemoryPipeline
    from qgmem.retrieve.config import RetrievalConfig
    from qgmem.testing.tiny_models import make_tiny

    llm, tok = make_tiny("llama", seed=1, hidden=32)
    llm.save_pretrained(tmp_path / "llm")
    tok.save_pretrained(tmp_path / "llm")
    retrieval, graph = RetrievalConfig(k=4), GraphConfig(max_edges=4)
    prepare = {"graph": to_dict(graph), "retrieval": to_dict(retrieval), "text_with_graph": False}
    dim = HashEmbedder().dim  # the hashed embedder's vectors are the graph's node features here
    GraphTokenLM(llm, tok, EncoderConfig(node_dim=dim, edge_dim=dim + 4, hidden=32, heads=2, projector_hidden=64),
                 graph_cfg=graph, base_model=str(tmp_path / "llm"),
                 extra={"model_name": str(tmp_path / "llm"), "max_length": 400, "prepare": prepare}
                 ).save_pretrained(tmp_path / "ck")
    with InProcessServer(tmp_path / "store", checkpoint=str(tmp_path / "ck"), k=None, max_new_tokens=6) as srv, \
            srv.client() as http:
        assert http.get("/v1/version").json()["answerer"] == "checkpoint" and srv.pipe.k == 4
        http.post("/v1/memories/c1/messages", json={"sessions": sessions_json(tiny_conversation)})
        got = http.post("/v1/memories/c1/answer", json={"question": Q}).json()
    with MemoryPipeline.from_pretrained(tmp_path / "ck", store_dir=tmp_path / "store", max_new_tokens=6) as pipe:
        want = pipe.answer(Q, namespace="c1")
    assert got["raw"] == want.raw and items_of(got) == items_of(want.working_memory) and len(got["items"]) <= 4


def test_a_namespace_forgotten_by_another_process_is_404_naming_no_other_namespace(tmp_path):
    from qgmem.construct.forget import forget
    from qgmem.serve.tenants import parse_env_keys
    from qgmem.store import MemoryStore

    keys = parse_env_keys("key-of-team-a=a-*;key-of-team-b=b-*")
    with InProcessServer(tmp_path / "store", keys=keys) as srv, srv.client("key-of-team-a") as a, \
            srv.client("key-of-team-b") as b:
        a.post("/v1/memories/a-1/messages", json={"messages": [{"speaker": "Ann", "text": "I play the oboe."}]})
        b.post("/v1/memories/b-secret/messages", json={"messages": [{"speaker": "Ben", "text": "I hide gold."}]})
        assert a.post("/v1/memories/a-1/search", json={"question": "What do I play?"}).status_code == 200
        with MemoryStore(tmp_path / "store") as st:  # `qgmem forget` while the server runs
            forget(st, "a-1")
        r = a.post("/v1/memories/a-1/search", json={"question": "What do I play?"})
        assert r.status_code == 404 and "b-secret" not in r.text and "oboe" not in r.text
