"""Sharded builds and retrieval runs (`--shard I/N`) and their merges (`qgmem merge-stores`, `qgmem
merge-runs`): the shard assignment is a stable partition; N shard builds merged equal one full build,
table by table, and retrieve the same working memories; a namespace that differs between inputs is
refused before anything is written, and a merge that fails half-way leaves no half-merged namespace;
merged shard runs give the unsharded run's summary; bad `--shard` values are one line, exit code 2."""

from __future__ import annotations

import copy
import dataclasses
import json
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from qgmem.cli import main
from qgmem.construct import merge_stores as ms
from qgmem.evaluation import cli as eval_cli
from qgmem.evaluation.config import RetrievalBenchConfig
from qgmem.data.registry import load_conversations_json
from qgmem.evaluation.retrieval import run_benchmark
from qgmem.io import read_jsonl
from qgmem.methods import MethodContext, make_methods
from qgmem.retrieve.config import RetrievalConfig
from qgmem.sharding import Shard, ShardError, parse_shard, shard_of
from qgmem.store import MemoryStore
from qgmem.testing.hash_embedder import HashEmbedder, patch_embedder
from qgmem.types import Conversation

IDS = [f"c{i}" for i in range(1, 7)]  # with N=3: shard 0 {c2}, shard 1 {c4, c5, c6}, shard 2 {c1, c3}
TIMESTAMPS = {"build_state": {"done_at"}, "failures": {"at"}}


@pytest.fixture
def convs(tiny_conversation) -> list[Conversation]:
    """Six variants of the tiny conversation, each with a sentence of its own."""
    out = []
    for i, cid in enumerate(IDS):
        c = copy.deepcopy(tiny_conversation)
        c.id = cid
        c.sessions[0].turns[6].text += f" My lucky number is {i + 11}."
        for q in c.questions:
            q.conversation_id = cid
        out.append(c)
    return out


@pytest.fixture
def hashed(monkeypatch):
    return patch_embedder(monkeypatch, HashEmbedder(dim=64))


def _write(path: Path, conversations: list[Conversation]) -> Path:
    path.write_text(json.dumps([dataclasses.asdict(c) for c in conversations]))
    return path


def _build(*argv: str) -> int:
    return main(["build", "--no-progress", *argv])


def _tables(store_dir: Path, timestamps: bool = False) -> dict:
    """Every namespace-keyed table's rows (time stamps left out unless asked), the settings rows and
    the bytes of every embedding file: what a store holds."""
    con = sqlite3.connect(store_dir / "store.sqlite")
    out = {}
    for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({t})").fetchall()]
        if "ns" in cols:
            keep = [c for c in cols if timestamps or c not in TIMESTAMPS.get(t, ())]
            out[t] = sorted(con.execute(f"SELECT {', '.join(keep)} FROM {t}").fetchall())
    out["settings"] = sorted(con.execute("SELECT * FROM meta WHERE key LIKE 'settings:%'").fetchall())
    out["files"] = {f: (store_dir / "embeddings" / f).read_bytes() for (f,) in
                    con.execute("SELECT file FROM embeddings").fetchall()}
    con.close()
    return out


def _working_memories(store_dir: Path, conversations: list[Conversation]) -> dict:
    """Each question's working memory (labels, units, turns, text, scores) from the store, which keeps the vectors."""
    cfg = RetrievalConfig(embedder="hash", extractor="rule", query_parser="rule")
    cfg.rerank.kind = "none"
    with MemoryStore(store_dir) as store:
        (m,) = make_methods(["qgmem-activation"], MethodContext(store=store, retrieval=cfg), {}).values()
        out = {}
        for c in conversations:
            m.build(c)
            for q in c.questions:
                wm = m.activate(q, 5)
                out[(c.id, q.id)] = [(it.label, it.unit.id if it.unit else None, list(it.turn_ids), it.text, it.score)
                                     for it in wm.items]
            m.release(c.id)
    return out


def test_shard_assignment_is_a_stable_partition() -> None:
    ids = [f"conv-{i}" for i in range(300)]
    for n in (1, 2, 3, 8):
        owners = {c: [i for i in range(n) if Shard(i, n).holds(c)] for c in ids}
        assert all(len(o) == 1 for o in owners.values())  # every conversation in exactly one shard
        assert all(any(o == [i] for o in owners.values()) for i in range(n))  # none empty here
        shuffled = random.Random(n).sample(ids, len(ids)) + ["new-1", "new-2"]  # other order, a grown set
        assert {c: shard_of(c, n) for c in shuffled if c in owners} == {c: o[0] for c, o in owners.items()}
    assert [shard_of(c, 3) for c in IDS] == [2, 0, 2, 1, 1, 1]  # fixed: the rule never changes silently
    assert parse_shard(" 2 / 5 ") == Shard(2, 5) and str(Shard(2, 5)) == "2/5" and Shard(2, 5).suffix == ".shard-2-of-5"
    for bad in ("3/3", "a/b", "1/0", "-1/2", "1", ""):
        with pytest.raises(ShardError, match="--shard"):
            parse_shard(bad)


@pytest.mark.parametrize("bad", ["3/3", "a/b", "1/0"])
def test_bad_shard_is_one_line_and_exit_2(bad, tmp_path, convs, capsys) -> None:
    f = _write(tmp_path / "convs.json", convs[:1])
    assert _build("--input", str(f), "--store", str(tmp_path / "s"), "--shard", bad) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"qgmem build: --shard {bad!r}: ") and err.count("\n") == 1
    assert not any(tmp_path.glob("s*")), "nothing is written for a bad --shard"
    cfg = tmp_path / "r.yaml"
    cfg.write_text(f"task: retrieval\nmethods: [bm25-turns]\noutput_dir: {tmp_path / 'out'}\n")
    assert eval_cli.main(["--config", str(cfg), "--shard", bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"evaluate.py: --shard {bad!r}: ") and err.count("\n") == 1


def test_shard_needs_retrieval_and_a_run_name(tmp_path, capsys) -> None:
    cfg = tmp_path / "r.yaml"
    cfg.write_text(f"task: retrieval\nmethods: [bm25-turns]\noutput_dir: {tmp_path / 'out'}\n")
    assert eval_cli.main(["--config", str(cfg), "--shard", "0/2"]) == 2
    assert "needs run_name=NAME" in capsys.readouterr().err and not (tmp_path / "out").exists()
    qa = tmp_path / "qa.yaml"
    qa.write_text("task: qa\n")
    assert eval_cli.main(["--config", str(qa), "--shard", "0/2"]) == 2
    assert "only retrieval runs" in capsys.readouterr().err
    assert main(["merge-stores", "--into", str(tmp_path / "m"), str(tmp_path / "nope")]) == 2
    assert "not a qgmem store" in capsys.readouterr().err


def test_shard_builds_merged_equal_one_full_build(tmp_path, convs, hashed, capsys) -> None:
    f = _write(tmp_path / "convs.json", convs)
    rev = _write(tmp_path / "rev.json", convs[::-1])
    assert _build("--input", str(f), "--store", str(tmp_path / "full")) == 0
    for i in range(3):  # shard 1 from the input in reverse order: the same conversations
        assert _build("--input", str(rev if i == 1 else f), "--store", str(tmp_path / "x"), "--shard", f"{i}/3") == 0
    shards = sorted(tmp_path.glob("x.shard-*-of-3"))
    held = [MemoryStore(s).namespaces() for s in shards]
    assert held == [["c2"], ["c4", "c5", "c6"], ["c1", "c3"]]
    assert json.loads((shards[1] / "build_report.json").read_text())["shard"] == "1/3"
    convs = load_conversations_json(f)  # as the builds read them (a build compares the whole conversation)
    wm_full = _working_memories(tmp_path / "full", convs)  # stores vectors too (embedding rows and files)
    for s, names in zip(shards, held):
        _working_memories(s, [c for c in convs if c.id in names])
    capsys.readouterr()
    assert main(["merge-stores", "--into", str(tmp_path / "merged"), *map(str, shards)]) == 0
    assert "6 namespace(s) merged" in capsys.readouterr().out
    merged = _tables(tmp_path / "merged")
    assert merged == _tables(tmp_path / "full") and merged["embeddings"] and merged["units"]
    assert _working_memories(tmp_path / "merged", convs) == wm_full
    # a full build on the merged store has nothing to do; merging again changes nothing
    before = _tables(tmp_path / "merged", timestamps=True)
    assert _build("--input", str(f), "--store", str(tmp_path / "merged")) == 0
    assert main(["merge-stores", "--into", str(tmp_path / "merged"), *map(str, shards)]) == 0
    assert _tables(tmp_path / "merged", timestamps=True) == before
    assert "6 namespace(s) held identically more than once" in capsys.readouterr().out


def test_conflicting_namespace_refused_and_failed_merge_leaves_no_half_namespace(tmp_path, convs, capsys,
                                                                                 monkeypatch) -> None:
    f = _write(tmp_path / "convs.json", convs[:3])
    assert _build("--input", str(f), "--store", str(tmp_path / "a")) == 0
    shutil.copytree(tmp_path / "a", tmp_path / "a_copy")
    edited = copy.deepcopy(convs[1])
    edited.sessions[1].turns[0].text = "Big news: I left Acme Corp and now work at Initech."
    assert _build("--input", str(_write(tmp_path / "b.json", [edited])), "--store", str(tmp_path / "b")) == 0
    capsys.readouterr()
    assert main(["merge-stores", "--into", str(tmp_path / "m"), str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "namespace 'c2' differs between" in err and err.count("\n") == 1
    assert not (tmp_path / "m").exists(), "nothing is written when inputs differ"
    # a merge killed before copying c3: c1, c2 are merged whole, c3 not at all; a rerun completes it
    real = ms._copy

    def dying(ns, src, dst, con):
        if ns == "c3":
            raise KeyboardInterrupt
        real(ns, src, dst, con)

    monkeypatch.setattr(ms, "_copy", dying)
    with pytest.raises(KeyboardInterrupt):
        ms.merge_stores(tmp_path / "m", [tmp_path / "a", tmp_path / "a_copy"])
    assert MemoryStore(tmp_path / "m").namespaces() == ["c1", "c2"]
    monkeypatch.setattr(ms, "_copy", real)
    report = ms.merge_stores(tmp_path / "m", [tmp_path / "a", tmp_path / "a_copy"])  # identical inputs are fine
    assert report.copied == {str(tmp_path / "a"): ["c3"]} and report.identical == ["c1", "c2", "c3"]
    assert _tables(tmp_path / "m") == _tables(tmp_path / "a")
    assert main(["merge-stores", "--into", str(tmp_path / "m"), str(tmp_path / "b")]) == 2  # against the target too
    assert "namespace 'c2' differs" in capsys.readouterr().err


def test_copy_is_one_transaction_per_namespace(tmp_path, convs, monkeypatch) -> None:
    """A failure inside a namespace's copy (here: its traces) rolls back all of its rows."""
    f = _write(tmp_path / "convs.json", convs[:1])
    assert _build("--input", str(f), "--store", str(tmp_path / "a")) == 0

    class Failing:
        def __init__(self, con):
            self.con = con

        def execute(self, *a):
            return self.con.execute(*a)

        def executemany(self, sql, rows):
            if "INTO traces" in sql:
                raise sqlite3.OperationalError("disk I/O error")
            return self.con.executemany(sql, rows)

    real = ms._copy
    monkeypatch.setattr(ms, "_copy", lambda ns, src, dst, con: real(ns, src, dst, Failing(con)))
    with pytest.raises(sqlite3.OperationalError):
        ms.merge_stores(tmp_path / "m", [tmp_path / "a"])
    assert MemoryStore(tmp_path / "m").namespaces() == [] and not any(_tables(tmp_path / "m").values())


def _cfg(tmp_path: Path, **kw) -> RetrievalBenchConfig:
    base = dict(output_dir=str(tmp_path / "out"), store_dir=str(tmp_path / "store"), k=3, token_budget=40,
                methods=["qgmem-activation", "qgmem-no-rerank", "bm25-turns", "dense-turns"],
                dev_conversations=["c4"], retrieval=RetrievalConfig(embedder="hash", query_parser="rule"))
    base["retrieval"].rerank.kind = "none"
    base.update(kw)
    return RetrievalBenchConfig(**base)


def _without_latency(summary: dict) -> dict:
    s = json.loads(json.dumps(summary))
    s.pop("run")
    for per in s["groups"].values():
        for m in per.values():
            for key in [k for k in m if k.startswith("latency")]:
                m.pop(key)
    return s


def test_sharded_retrieval_runs_merged_equal_the_unsharded_run(tmp_path, convs, hashed, capsys) -> None:
    full = run_benchmark(_cfg(tmp_path, run_name="full"), convs)
    for i in range(3):
        s = run_benchmark(_cfg(tmp_path, run_name="sh", shard=f"{i}/3"), convs)
        assert s["shard"] == f"{i}/3" and s["conversations"] == [1, 3, 2][i]
    root = tmp_path / "out" / "locomo"
    shards = sorted(root.glob("sh.shard-*-of-3"))
    assert [p.name for p in shards] == ["sh.shard-0-of-3", "sh.shard-1-of-3", "sh.shard-2-of-3"]
    assert sorted(p.name for p in tmp_path.glob("store*")) == ["store", *[f"store.shard-{i}-of-3" for i in range(3)]]
    capsys.readouterr()
    assert main(["merge-runs", "--into", str(root / "merged"), *map(str, shards[:2])]) == 2
    assert "shard(s) [2] of 3 missing" in capsys.readouterr().err and not (root / "merged").exists()
    assert main(["merge-runs", "--into", str(root / "merged"), *map(str, shards), str(shards[0])]) == 2
    assert "shard 0/3 given twice" in capsys.readouterr().err
    unfinished = root / "unfinished.shard-2-of-3"
    shutil.copytree(shards[2], unfinished)
    meta = json.loads((unfinished / "meta.json").read_text())
    (unfinished / "meta.json").write_text(json.dumps({**meta, "status": "interrupted"}))
    assert main(["merge-runs", "--into", str(root / "merged"), *map(str, shards[:2]), str(unfinished)]) == 2
    assert "shard 2/3 is 'interrupted', not finished" in capsys.readouterr().err
    assert main(["merge-runs", "--into", str(root / "merged"), *map(str, shards)]) == 0
    merged = json.loads((root / "merged" / "summary.json").read_text())
    assert merged["run"] == "merged" and merged["shard"] is None
    assert _without_latency(merged) == _without_latency(full)
    assert merged["same_as"] == {"qgmem-no-rerank": "qgmem-activation"}

    def rows(run: Path) -> list:
        return sorted(json.dumps({k: v for k, v in r.items() if k != "latency_ms"}, sort_keys=True)
                      for r in read_jsonl(run / "retrieval.jsonl"))

    assert rows(root / "merged") == rows(root / "full")
    assert (root / "merged" / "results.md").read_text().split("\n### ")[0] == \
        (root / "full" / "results.md").read_text().split("\n### ")[0]
    meta = json.loads((root / "merged" / "meta.json").read_text())
    assert meta["status"] == "finished" and [m["shard"] for m in meta["merged_from"]] == ["0/3", "1/3", "2/3"]
    assert main(["merge-runs", "--into", str(root / "merged"), *map(str, shards)]) == 2
    assert "exists already" in capsys.readouterr().err
    assert main(["merge-runs", "--into", str(root / "m2"), str(root / "full")]) == 2
    assert "not a shard run" in capsys.readouterr().err
