"""`qgmem build`: input errors name file and record; a real `kill -9` mid-build then resume gives the
same store as an uninterrupted build; the build table and build_report.json are written."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REDUCED

from qgmem.cli import main
from qgmem.store import MemoryStore


def test_bad_input_file_names_file_and_record(tmp_path, tiny_conversation) -> None:
    good = dataclasses.asdict(tiny_conversation)
    bad = dict(good)
    del bad["sessions"]
    f = tmp_path / "convs.json"
    f.write_text(json.dumps([good, bad]))
    with pytest.raises(SystemExit, match=r"convs\.json: conversation \[1\]: bad or missing field: 'sessions'"):
        main(["build", "--input", str(f), "--store", str(tmp_path / "s"), "--no-progress"])
    f.write_text(json.dumps([good]))
    with pytest.raises(SystemExit, match=r"unknown conversation id\(s\) \['nope'\]"):
        main(["build", "--input", str(f), "--store", str(tmp_path / "s"), "--conversations", "nope"])


def test_bad_config_key_is_named(tmp_path, tiny_conversation) -> None:
    f = tmp_path / "convs.json"
    f.write_text(json.dumps([dataclasses.asdict(tiny_conversation)]))
    cfg = tmp_path / "build.yaml"
    cfg.write_text("traces:\n  relation_treshold: 0.9\n")
    with pytest.raises(ValueError, match=r"build\.yaml\.traces: unknown key\(s\) \['relation_treshold'\]"):
        main(["build", "--input", str(f), "--store", str(tmp_path / "s"), "--config", str(cfg)])


def _content(store_dir: Path) -> dict:
    st = MemoryStore(store_dir)
    out = {ns: ([dataclasses.asdict(u) for u in st.units(ns)], [dataclasses.asdict(t) for t in st.traces(ns)])
           for ns in st.namespaces()}
    st.close()
    return out


def _done_windows(store_dir: Path) -> int:
    db = store_dir / "store.sqlite"
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        (n,) = con.execute("SELECT COUNT(*) FROM build_state WHERE step_key LIKE 'extract:%'").fetchone()
        con.close()
        return n
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
@pytest.mark.data
def test_kill_9_then_resume_gives_identical_store(tmp_path, data_dir) -> None:
    sessions = "2" if REDUCED else "5"
    args = [sys.executable, "-m", "qgmem.cli", "build", "--dataset", "locomo", "--data-dir", str(data_dir),
            "--conversations", "conv-26", "conv-30", "--limit-sessions", sessions, "--no-progress"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    killed = tmp_path / "killed"
    proc = subprocess.Popen(args + ["--store", str(killed)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while _done_windows(killed) == 0 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "build finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    st = MemoryStore(killed)
    assert not st.is_done("conv-30", "traces"), "the kill should interrupt the build"
    st.close()
    # resume with the same command
    res = subprocess.run(args + ["--store", str(killed)], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "extraction" in res.stdout and "consolidation" in res.stdout  # the build table
    fresh = tmp_path / "fresh"
    res = subprocess.run(args + ["--store", str(fresh)], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    a, b = _content(killed), _content(fresh)
    assert set(a) == {"conv-26", "conv-30"} and a == b
    rep = json.loads((fresh / "build_report.json").read_text())
    assert rep["phases"]["extraction"]["units"] == sum(len(v[0]) for v in b.values())
    assert rep["phases"]["extraction"]["failed_windows"] == 0 and rep["conversations"] == ["conv-26", "conv-30"]
