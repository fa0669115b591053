"""A `qgmem serve` subprocess on a free loopback port, for the serve tests (and what they share)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
LAUNCH = ROOT / "tests" / "serve_launch.py"
KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789"}
K = 5


def warm_imports() -> None:
    """What the tests' own pipeline needs, imported while a server starts."""
    import qgmem.baselines.dense_turns  # noqa: F401 - patch_embedder patches it
    import qgmem.pipeline  # noqa: F401


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_config(path: Path, **extra: object) -> Path:
    """The tests' server settings: the hashed embedder, k=5, small caps; `extra` merged on top."""
    cfg: dict = {"k": K, "retrieval": {"embedder": "hash-bow"},
                 "limits": {"max_message_chars": 2000, "max_body_bytes": 200_000, "max_messages": 50},
                 "llm": {"cache": False}}
    for key, value in extra.items():
        if isinstance(value, dict):
            cfg.setdefault(key, {}).update(value)
        else:
            cfg[key] = value
    path.write_text(yaml.safe_dump(cfg))
    return path


def write_keys(path: Path) -> Path:
    path.write_text(yaml.safe_dump({"keys": [
        {"tenant": "alice", "key": KEYS["alice"], "namespaces": ["alice", "alice-*"]},
        {"tenant": "bob", "key": KEYS["bob"], "namespaces": ["bob-*"]},
    ]}))
    return path


def env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
            "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}


def launch_args(store: Path, config: Path, *serve: str, answer: str | None = "Globex") -> list[str]:
    own = ["--hash-embedder"] + (["--scripted-answer", answer] if answer is not None else [])
    return [str(LAUNCH), *own, "--", "--store", str(store), "--config", str(config), *serve]


class Server:
    """`with Server(store, config, ...) as srv:` -> srv.url, srv.client(key), srv.kill9(), srv.start()."""

    def __init__(self, store: Path, config: Path, *serve: str, answer: str | None = "Globex",
                 log: Path | None = None):
        self.store, self.config, self.serve, self.answer = store, config, list(serve), answer
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log or store.parent / f"serve-{self.port}.log"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 180.0) -> Server:
        return self.spawn().wait(timeout)

    def spawn(self) -> Server:
        """Start the process without waiting (the caller can do its own imports meanwhile, on the other core)."""
        args = launch_args(self.store, self.config, "--port", str(self.port), *self.serve, answer=self.answer)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([sys.executable, *args], stdout=log, stderr=subprocess.STDOUT, env=env(),
                                         cwd=ROOT)
        return self

    def wait(self, timeout: float = 180.0) -> Server:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not come up in {timeout:.0f} s:\n{self.log.read_text()[-3000:]}")

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def client(self, key: str | None = None, **kw: object) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60.0, **kw)

    def __enter__(self) -> Server:
        self.spawn()
        warm_imports()
        return self.wait()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def pipeline(store: Path, llm: object = None):
    """The in-process MemoryPipeline the server runs, on the same store (hashed embedder patched by the caller)."""
    from qgmem.llm.scripted import ScriptedBackend
    from qgmem.pipeline import MemoryPipeline
    from qgmem.retrieve.config import RetrievalConfig

    backend = llm if llm is not None else ScriptedBackend(lambda req: "From [M1].\nAnswer: Globex")
    return MemoryPipeline.from_pretrained(None, llm=backend, store_dir=store, retrieval=RetrievalConfig(
        embedder="hash-bow"), k=K)


def items_of(wm) -> list[tuple]:
    """A working memory (pipeline object or server JSON) as comparable rows."""
    if isinstance(wm, dict):
        return [(it["label"], it["text"], it["turn_ids"], it["unit_id"], round(it["score"], 9)) for it in wm["items"]]
    return [(it.label, it.text, list(it.turn_ids), it.unit.id if it.unit else None, round(it.score, 9))
            for it in wm.items]


def sessions_json(conv) -> list[dict]:
    return [{"id": s.id, "date": s.date, "turns": [{"id": t.id, "speaker": t.speaker, "text": t.text}
                                                 for t in s.turns]} for s in conv.sessions]


def store_snapshot(store: Path) -> dict[str, list]:
    """Every row of every table of a store (read-only), and its embedding files: what 'changed nothing' compares."""
    import sqlite3

    db = sqlite3.connect(f"file:{store / 'store.sqlite'}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        out = {t: sorted(map(repr, db.execute(f"SELECT * FROM {t}").fetchall())) for t in tables}
    finally:
        db.close()
    out["files"] = sorted((p.name, p.stat().st_size) for p in (store / "embeddings").glob("*"))
    return out


class InProcessServer:
    """`qgmem serve`'s app under uvicorn in a thread of this process (its imports are paid already), on a
    free loopback port: for tests whose point is not the process boundary (answer backends, limits, restart)."""

    def __init__(self, store: Path, backend: object = None, keys: list | None = None, **cfg: object):
        """`cfg`: ServeConfig fields (an `llm` section picks the backend; else `backend`, default scripted)."""
        from qgmem.config import from_dict
        from qgmem.llm.scripted import ScriptedBackend
        from qgmem.serve.config import ServeConfig

        data: dict = {"k": K, "retrieval": {"embedder": "hash-bow"}, "llm": {"cache": False}}
        data.update(cfg)
        self.cfg = from_dict(ServeConfig, data)
        self.cfg.store_dir = str(store)
        if backend is None and "llm" not in cfg:
            backend = ScriptedBackend(lambda req: "From [M1].\nAnswer: Globex")
        self.llm, self.keys = backend, keys or []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> InProcessServer:
        import threading

        import uvicorn

        from qgmem.serve.cli import make_pipeline
        from qgmem.serve.http import create_app
        from qgmem.serve.mcp_tools import make_mcp
        from qgmem.serve.service import MemoryService
        from qgmem.serve.tenants import Tenants

        self.pipe = make_pipeline(self.cfg, self.llm)
        self.service = MemoryService(self.pipe, Tenants(self.keys), self.cfg.limits)
        app = create_app(self.service, make_mcp(self.service))
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("in-process server did not start")
            time.sleep(0.05)
        return self

    def client(self, key: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60.0)

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(20)
        self.pipe.close()


def wait_for(cond, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
