"""Load on `qgmem serve`: N concurrent clients adding messages and searching for a bounded time, on loopback.

    python bench/serve_load.py --clients 8 --seconds 60 [--kill-after 20] [--out results/serve_load.json]

Phase 1 runs the load for `--seconds` on a fresh store, then checks that every acknowledged message is
stored exactly once. Phase 2 runs the load again, kills the server with SIGKILL after `--kill-after`
seconds (requests in flight), restarts it on the same store, and repeats the check (acknowledged
messages exactly once; unacknowledged ones at most once) after a search in every namespace. The server
runs the default configuration (MiniLM embedder, rule extractor); answers are not part of the load.
Clients and time are bounded (--clients <= 64, --seconds <= 600) and only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
WORDS = ("coffee", "garden", "piano", "Lisbon", "marathon", "sister", "guitar", "novel", "bakery", "train")
QUESTIONS = ("What did I say about the {w}?", "When did I mention {w}?", "Where was the {w}?")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, store: Path, port: int, work: Path):
        self.store, self.port, self.log = store, port, work / "server.log"
        self.url = f"http://127.0.0.1:{port}"
        cfg = work / "serve_load.yaml"  # answers are not benchmarked: no LLM is loaded or called
        cfg.write_text("llm:\n  backend: openai\n  base_url: http://127.0.0.1:9/v1\n  cache: false\n")
        self.cmd = [sys.executable, "-m", "qgmem.cli", "serve", "--store", str(store), "--port", str(port),
                    "--config", str(cfg)]
        self.proc: subprocess.Popen | None = None

    def start(self) -> float:
        t0 = time.monotonic()
        env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        while time.monotonic() - t0 < 600:
            if self.proc.poll() is not None:
                raise SystemExit(f"server exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=1).status_code == 200:
                    return time.monotonic() - t0
            except httpx.HTTPError:
                time.sleep(0.2)
        raise SystemExit("server did not start in 600 s")

    def kill9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)


class Load:
    """The clients: each adds to and searches namespaces of a shared pool (two clients per namespace)."""

    def __init__(self, url: str, clients: int, add_share: float, phase: str, seed: int):
        self.url, self.clients, self.add_share, self.phase = url, clients, add_share, phase
        self.namespaces = [f"user-{i}" for i in range(max(1, clients // 2))]
        self.lat: dict[str, list[float]] = {"add": [], "search": []}
        self.errors: Counter[str] = Counter()
        self.acked: dict[str, list[str]] = {ns: [] for ns in self.namespaces}
        self.sent: dict[str, list[str]] = {ns: [] for ns in self.namespaces}
        self.messages = 0
        self._lock = threading.Lock()
        self._seed = seed

    def _client(self, c: int, deadline: float, stop: threading.Event) -> None:
        rng = random.Random(self._seed * 1000 + c)
        with httpx.Client(base_url=self.url, timeout=120) as http:
            k = 0
            while time.monotonic() < deadline and not stop.is_set():
                ns = self.namespaces[c % len(self.namespaces)]
                k += 1
                if rng.random() < self.add_share:
                    n = rng.randint(1, 3)
                    ids = [f"{self.phase}-c{c}-{k}-{j}" for j in range(n)]
                    msgs = [{"id": i, "speaker": rng.choice(("Ann", "Ben")), "text": f"Message {i}: I talked about "
                             f"the {rng.choice(WORDS)} and the {rng.choice(WORDS)} today."} for i in ids]
                    body, kind = {"session_id": f"{self.phase}-c{c}-s{k // 10}", "messages": msgs}, "add"
                    path = f"/v1/memories/{ns}/messages"
                else:
                    ids, kind = [], "search"
                    body = {"question": rng.choice(QUESTIONS).format(w=rng.choice(WORDS))}
                    path = f"/v1/memories/{ns}/search"
                with self._lock:
                    self.sent[ns] += ids
                t0 = time.perf_counter()
                try:
                    r = http.post(path, json=body)
                except httpx.HTTPError as e:
                    with self._lock:
                        self.errors[f"{kind}: {type(e).__name__}"] += 1
                    if stop.is_set():
                        return
                    time.sleep(0.5)
                    continue
                dt = (time.perf_counter() - t0) * 1000
                with self._lock:
                    if r.status_code == 200:
                        self.lat[kind].append(dt)
                        if ids:
                            self.acked[ns] += ids
                            self.messages += len(ids)
                    elif not (kind == "search" and r.status_code == 404):  # a namespace not written yet
                        self.errors[f"{kind}: HTTP {r.status_code}"] += 1

    def run(self, seconds: float, kill: Server | None = None, kill_after: float = 0.0) -> float:
        stop = threading.Event()
        deadline = time.monotonic() + seconds
        threads = [threading.Thread(target=self._client, args=(c, deadline, stop)) for c in range(self.clients)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        if kill is not None:
            time.sleep(kill_after)
            kill.kill9()
            stop.set()
        for t in threads:
            t.join()
        return time.monotonic() - t0


def _pct(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {"n": 0}
    a = np.asarray(xs)
    return {"n": len(xs), "p50_ms": round(float(np.percentile(a, 50)), 1), "p95_ms": round(float(np.percentile(a, 95)), 1),
            "p99_ms": round(float(np.percentile(a, 99)), 1), "max_ms": round(float(a.max()), 1)}


def check(url: str, loads: list[Load]) -> dict[str, int]:
    """Every acknowledged message stored exactly once; a sent but unacknowledged one at most once."""
    out = Counter()
    with httpx.Client(base_url=url, timeout=300) as http:
        for ns in loads[0].namespaces:
            r = http.get(f"/v1/memories/{ns}/messages")
            stored = Counter(t["id"] for s in r.json()["sessions"] for t in s["turns"]) if r.status_code == 200 \
                else Counter()
            for load in loads:
                acked = set(load.acked[ns])
                out["acked"] += len(acked)
                out["acked_missing"] += sum(1 for i in acked if stored[i] == 0)
                out["acked_duplicated"] += sum(1 for i in acked if stored[i] > 1)
                lost = [i for i in load.sent[ns] if i not in acked]
                out["unacked_sent"] += len(lost)
                out["unacked_stored"] += sum(1 for i in lost if stored[i] == 1)
                out["unacked_duplicated"] += sum(1 for i in lost if stored[i] > 1)
    return dict(out)


def stale_vectors(store: Path) -> list[str]:
    """Embedding rows whose file no longer has their shape (what a kill between the file's rename and the
    row's commit leaves; the store then encodes those texts again on the namespace's next use)."""
    import sqlite3

    db = sqlite3.connect(f"file:{store / 'store.sqlite'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT ns, kind, file, rows, dim FROM embeddings").fetchall()
    finally:
        db.close()
    out = []
    for ns, kind, file, n, dim in rows:
        path = store / "embeddings" / file
        if not path.exists() or np.load(path, mmap_mode="r").shape != (n, dim):
            out.append(f"{ns}/{kind}")
    return out


def summary(load: Load, wall: float) -> dict:
    ops = len(load.lat["add"]) + len(load.lat["search"])
    return {"wall_s": round(wall, 1), "requests_ok": ops, "requests_per_s": round(ops / wall, 1),
            "messages_per_s": round(load.messages / wall, 1), "add": _pct(load.lat["add"]),
            "search": _pct(load.lat["search"]), "errors": dict(load.errors)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--kill-after", type=float, default=20.0, help="phase 2: SIGKILL the server after this long")
    p.add_argument("--add-share", type=float, default=0.3, help="share of requests that add messages")
    p.add_argument("--store", default=None, help="store directory (default: a fresh temporary one)")
    p.add_argument("--out", default=None, help="write the figures as JSON here")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    if not 1 <= a.clients <= 64 or not 1 <= a.seconds <= 600 or not 1 <= a.kill_after <= a.seconds:
        p.error("--clients 1..64, --seconds 1..600, --kill-after 1..seconds")
    tmp = tempfile.TemporaryDirectory(prefix="qgmem-serve-load-")
    store = Path(a.store or Path(tmp.name) / "store")
    srv = Server(store, free_port(), Path(tmp.name))
    report: dict = {"clients": a.clients, "seconds": a.seconds, "add_share": a.add_share,
                    "startup_s": round(srv.start(), 1)}
    try:
        one = Load(srv.url, a.clients, a.add_share, "p1", a.seed)
        report["phase1"] = summary(one, one.run(a.seconds))
        report["phase1"]["check"] = check(srv.url, [one])
        two = Load(srv.url, a.clients, a.add_share, "p2", a.seed + 1)
        report["phase2"] = summary(two, two.run(a.seconds, kill=srv, kill_after=a.kill_after))
        report["stale_vectors_after_kill"] = stale_vectors(store)
        report["restart_s"] = round(srv.start(), 1)
        t0 = time.monotonic()
        with httpx.Client(base_url=srv.url, timeout=300) as http:  # first use of every namespace after the kill
            firsts = []
            for ns in one.namespaces:
                t1 = time.monotonic()
                http.post(f"/v1/memories/{ns}/search", json={"question": "What did I talk about?"})
                firsts.append(time.monotonic() - t1)
        report["first_search_after_restart_s"] = {"max": round(max(firsts), 2), "all": round(time.monotonic() - t0, 2)}
        report["phase2"]["check"] = check(srv.url, [one, two])
    finally:
        srv.stop()
        report["server_log_tail"] = srv.log.read_text()[-800:] if srv.log.exists() else ""
        tmp.cleanup()
    text = json.dumps(report, indent=1)
    print(text)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(text)
    bad = [report[ph]["check"].get(k, 0) for ph in ("phase1", "phase2") for k in ("acked_missing", "acked_duplicated",
                                                                                  "unacked_duplicated")]
    return 1 if any(bad) else 0


if __name__ == "__main__":
    sys.exit(main())
