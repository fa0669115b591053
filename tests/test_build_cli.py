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


def _build(*argv: str) -> int:
    return main(["build", "--no-progress", *argv])


def test_bad_input_file_names_file_and_record(tmp_path, tiny_conversation, capsys) -> None:
    good = dataclasses.asdict(tiny_conversation)
    bad = dict(good)
    del bad["sessions"]
    f = tmp_path / "convs.json"
    f.write_text(json.dumps([good, bad]))
    assert _build("--input", str(f), "--store", str(tmp_path / "s")) == 2
    err = capsys.readouterr().err
    assert "convs.json: conversation [1]: bad or missing field: 'sessions'" in err and "Traceback" not in err
    f.write_text(json.dumps([good]))
    assert _build("--input", str(f), "--store", str(tmp_path / "s"), "--conversations", "nope") == 2
    assert "unknown conversation id(s) ['nope']" in capsys.readouterr().err
    assert _build("--input", str(tmp_path / "missing.json"), "--store", str(tmp_path / "s")) == 2
    assert "file not found" in capsys.readouterr().err
    assert _build("--input", str(f), "--store", str(tmp_path / "s"), "--limit-sessions", "-1") == 2
    assert "--limit-sessions must be >= 1" in capsys.readouterr().err


def test_bad_config_key_yaml_and_override_are_named(tmp_path, tiny_conversation, capsys) -> None:
    f = tmp_path / "convs.json"
    f.write_text(json.dumps([dataclasses.asdict(tiny_conversation)]))
    cfg = tmp_path / "build.yaml"
    cfg.write_text("traces:\n  relation_treshold: 0.9\n")
    assert _build("--input", str(f), "--store", str(tmp_path / "s"), "--config", str(cfg)) == 2
    assert "build.yaml.traces: unknown key(s) ['relation_treshold']" in capsys.readouterr().err
    cfg.write_text("traces: [unclosed\n")
    assert _build("--input", str(f), "--store", str(tmp_path / "s"), "--config", str(cfg)) == 2
    assert "build.yaml: not valid YAML" in capsys.readouterr().err
    assert _build("--input", str(f), "--store", str(tmp_path / "s"), "--set", "window_size=abc") == 2
    assert "window_size" in capsys.readouterr().err
    assert not (tmp_path / "s").exists(), "nothing is written for a bad config"


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
