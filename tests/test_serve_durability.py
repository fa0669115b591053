"""kill -9 of a server in the middle of writes: every acknowledged message is stored exactly once, a
restarted server serves every namespace, and a namespace that was complete is served as stored (no
window extracted again)."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from qgmem.testing.hash_embedder import HashEmbedder, patch_embedder
from serve_helpers import (InProcessServer, Server, items_of, pipeline, wait_for, warm_imports,
                           write_config)

pytestmark = pytest.mark.usefixtures("one_thread")
WRITERS = 3


def _writer(url: str, w: int, acked: list[str], stop: threading.Event) -> None:
    """Adds one message per request to namespace d<w>, a new session every third; keeps the acknowledged ids."""
    with httpx.Client(base_url=url, timeout=30) as http:
        for i in range(10_000):
            if stop.is_set():
                return
            mid = f"w{w}-m{i}"
            body = {"session_id": f"s{i // 3}", "messages": [
                {"speaker": "Ann" if i % 2 else "Ben", "id": mid, "text": f"Note {i} of writer {w}: I bought {i} apples."}]}
            try:
                r = http.post(f"/v1/memories/d{w}/messages", json=body)
            except httpx.HTTPError:
                return  # the server is gone: this message was not acknowledged
            assert r.status_code == 200, r.text
            acked.append(mid)


def _big_add(url: str) -> None:
    msgs = [{"speaker": "Ann" if i % 2 else "Ben", "text": f"On day {i} I walked {i + 3} miles by the river."}
            for i in range(120)]
    try:
        httpx.post(f"{url}/v1/memories/big/messages", json={"session_id": "long", "messages": msgs}, timeout=120)
    except httpx.HTTPError:
        pass


def _mid_build(store, ns: str) -> bool:
    """The conversation of `ns` is stored, some of its windows are, and it is not complete yet."""
    import sqlite3

    try:
        db = sqlite3.connect(f"file:{store / 'store.sqlite'}?mode=ro", uri=True, timeout=1)
        try:
            conv = db.execute("SELECT 1 FROM conversations WHERE ns=?", (ns,)).fetchone()
            units = db.execute("SELECT COUNT(*) FROM units WHERE ns=?", (ns,)).fetchone()[0]
            done = db.execute("SELECT 1 FROM build_state WHERE ns=? AND step_key='complete'", (ns,)).fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return False
    return bool(conv) and units > 0 and not done


def _stored_ids(sessions: list[dict]) -> list[str]:
    return [t["id"] for s in sessions for t in s["turns"]]


def test_kill_9_during_writes_loses_no_acknowledged_message(tmp_path, monkeypatch):
    from qgmem.construct.build import is_complete, pending_windows, stored_config
    from qgmem.store import MemoryStore

    store = tmp_path / "store"
    srv = Server(store, write_config(tmp_path / "serve.yaml", limits={"max_messages": 120}), answer="ok").spawn()
    warm_imports()
    srv.wait()
    acked: list[list[str]] = [[] for _ in range(WRITERS)]
    stop = threading.Event()
    threads = [threading.Thread(target=_writer, args=(srv.url, w, acked[w], stop)) for w in range(WRITERS)]
    try:
        for t in threads:
            t.start()
        wait_for(lambda: min(map(len, acked)) >= 4, 120, "acknowledged writes")
        big = threading.Thread(target=_big_add, args=(srv.url,))
        big.start()  # a long write, killed once its conversation is stored and before its memory is complete
        wait_for(lambda: _mid_build(store, "big"), 120, "the long write to be half done")
        srv.kill9()  # with writes in flight
        big.join(60)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
        srv.stop()
    assert "no API keys configured" in srv.log.read_text()  # an open server says so when it starts
    with MemoryStore(store) as st:  # what the kill left: complete namespaces must be served exactly as stored
        complete = {}
        for ns in st.namespaces():
            conv = st.get_conversation(ns)
            if is_complete(st, ns) and not pending_windows(conv, st, stored_config(st, ns)):
                complete[ns] = ([(u.id, u.text) for u in st.units(ns)], sorted(st.done_keys(ns)))
    patch_embedder(monkeypatch, HashEmbedder())
    t0 = time.monotonic()
    with InProcessServer(store) as again, again.client() as http:  # restarted on the same store
        for w in range(WRITERS):
            ids = _stored_ids(http.get(f"/v1/memories/d{w}/messages").json()["sessions"])
            assert len(ids) == len(set(ids))
            assert set(acked[w]) <= set(ids), set(acked[w]) - set(ids)  # every acknowledged message, once
            r = http.post(f"/v1/memories/d{w}/search", json={"question": f"How many apples did writer {w} buy?"})
            assert r.status_code == 200 and r.json()["items"]
        st = again.pipe.store
        for ns, (units, done) in complete.items():
            assert ([(u.id, u.text) for u in st.units(ns)], sorted(st.done_keys(ns))) == (units, done), ns
        assert "big" not in complete
        assert http.post("/v1/memories/big/search", json={"question": "How far did I walk on day 7?"}).json()["items"]
        finished = [(u.id, u.text) for u in st.units("big")]  # the interrupted write, finished on first use
        found = {w: http.post(f"/v1/memories/d{w}/search", json={"question": "apples"}).json() for w in range(WRITERS)}
    assert time.monotonic() - t0 < 120
    with pipeline(store) as pipe:  # and the library reads what the restarted server served
        for w, got in found.items():
            assert items_of(got) == items_of(pipe.working_memory("apples", namespace=f"d{w}"))
        conv = pipe.store.get_conversation("big")
    with pipeline(tmp_path / "fresh") as fresh:  # the finished write equals a build from scratch
        fresh.add(conv, namespace="big")
        assert [(u.id, u.text) for u in fresh.store.units("big")] == finished and finished
