"""`qgmem merge-stores --into STORE STORE...`: join stores built by shards (`qgmem build --shard I/N`).

Every namespace of every input is copied whole: each row of each per-namespace table of the store
(conversation, units with their order and source window, traces, embedding rows and their `.npy`
matrices, generic records, build state, failure records) and the namespace's build settings. The
merged store then serves, extends, resumes and forgets exactly like one full build of all the inputs'
conversations (a `qgmem build` of the whole data set on it has nothing to do).

A namespace held by two inputs, or by an input and the target already, must be identical in both
(build and failure time stamps aside); identical copies are taken once. A difference stops the merge
before anything is written, naming the namespace (exit code 2). Each namespace is copied in one
transaction under the target's writer lock, its embedding files renamed into place first (as the store
itself writes them): a failed or killed merge leaves no half-merged namespace, and rerunning it copies
what is missing. The inputs' writer locks are held too, so a shard still being built is refused.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from qgmem.construct.build import is_complete
from qgmem.errors import UserError
from qgmem.store import MemoryStore

TIMESTAMPS = {"build_state": {"done_at"}, "failures": {"at"}}  # columns that differ between equal builds


class MergeError(RuntimeError, UserError):
    """Inputs that cannot be merged: not a store, given twice, or a namespace that differs between them."""


@dataclass
class MergeReport:
    copied: dict[str, list[str]] = field(default_factory=dict)  # input store -> namespaces copied from it
    identical: list[str] = field(default_factory=list)  # namespaces held identically more than once
    incomplete: list[str] = field(default_factory=list)  # merged namespaces whose build left windows unextracted


def _tables(con: sqlite3.Connection) -> dict[str, list[str]]:
    """Table -> columns, for every table keyed by namespace (it has an `ns` column)."""
    out = {}
    for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name").fetchall():
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({name})").fetchall()]
        if "ns" in cols:
            out[name] = cols
    return out


class _Reader:
    """Per-namespace rows of one store, read on a connection of its own."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.con = sqlite3.connect(store.db_path, timeout=60.0, isolation_level=None)
        self.tables = _tables(self.con)

    def namespaces(self) -> list[str]:
        union = " UNION ".join(f"SELECT ns FROM {t}" for t in self.tables)
        rows = self.con.execute(f"{union} UNION SELECT substr(key, 10) FROM meta WHERE key LIKE 'settings:%' "
                                "ORDER BY 1").fetchall()
        return [r[0] for r in rows]

    def rows(self, ns: str) -> dict[str, list[tuple]]:
        """Table -> the namespace's rows (ordered, so equal namespaces give equal lists); `meta` holds
        its settings row. One read transaction: a consistent snapshot even while a reader of the store
        adds vectors."""
        self.con.execute("BEGIN")
        try:
            out = {t: self.con.execute(f"SELECT {', '.join(cols)} FROM {t} WHERE ns=? ORDER BY "
                                       + ", ".join(map(str, range(1, len(cols) + 1))), (ns,)).fetchall()
                   for t, cols in self.tables.items()}
            out["meta"] = self.con.execute("SELECT key, value FROM meta WHERE key=?", (f"settings:{ns}",)).fetchall()
        finally:
            self.con.execute("COMMIT")
        return out

    def files(self, rows: dict[str, list[tuple]]) -> list[str]:
        """The embedding files named by a namespace's rows."""
        col = self.tables["embeddings"].index("file")
        return sorted(r[col] for r in rows["embeddings"])

    def fingerprint(self, ns: str) -> str:
        """A digest of the namespace's content: rows without time stamps, and its embedding files."""
        h = hashlib.sha256()
        rows = self.rows(ns)
        for table, got in rows.items():
            cols = self.tables.get(table, ["key", "value"])
            keep = [i for i, c in enumerate(cols) if c not in TIMESTAMPS.get(table, ())]
            h.update(json.dumps([table, [[r[i] for i in keep] for r in got]], default=str).encode())
        for file in self.files(rows):
            path = self.store.emb_dir / file
            h.update(path.read_bytes() if path.exists() else b"<missing>")
        return h.hexdigest()

    def close(self) -> None:
        self.con.close()


def _plan(readers: list[_Reader], target: _Reader | None) -> tuple[dict[str, _Reader], list[str]]:
    """namespace -> the input to copy it from (namespaces the target holds identically are left out),
    and the namespaces held identically more than once. A difference raises MergeError."""
    holders: dict[str, list[_Reader]] = {}
    for r in ([target] if target is not None else []) + readers:
        for ns in r.namespaces():
            holders.setdefault(ns, []).append(r)
    plan, identical = {}, []
    for ns, rs in holders.items():
        if len(rs) > 1:
            prints = {r.fingerprint(ns): r for r in rs}
            if len(prints) > 1:
                a, b = list(prints.values())[:2]
                raise MergeError(f"namespace {ns!r} differs between {a.store.root} and {b.store.root}; "
                                 "nothing was merged (rebuild one of them, or leave it out)")
            identical.append(ns)
        if rs[0] is not target:
            plan[ns] = rs[0]
    return plan, sorted(identical)


@contextmanager
def _transaction(con: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    con.execute("BEGIN IMMEDIATE")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def _copy(ns: str, src: _Reader, dst: MemoryStore, con: sqlite3.Connection) -> None:
    """One namespace: its embedding files renamed into place, then all its rows in one transaction."""
    rows = src.rows(ns)
    for file in src.files(rows):
        if (src.store.emb_dir / file).exists():
            tmp = dst.emb_dir / f".{file}.merge-{os.getpid()}"
            shutil.copyfile(src.store.emb_dir / file, tmp)
            os.replace(tmp, dst.emb_dir / file)
    with _transaction(con):
        for table, cols in src.tables.items():
            con.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                            rows[table])
        con.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", rows["meta"])


def _open_input(path: Path, into: Path) -> MemoryStore:
    if not (path / "store.sqlite").is_file():
        raise MergeError(f"{path}: not a qgmem store (no store.sqlite)")
    if path.resolve() == into.resolve():
        raise MergeError(f"{path}: is the target of --into; give it only there")
    return MemoryStore(path)


def merge_stores(into: str | Path, inputs: list[str | Path]) -> MergeReport:
    """Copy every namespace of `inputs` into the store `into` (created if missing); see the module doc."""
    into, paths = Path(into), [Path(p) for p in inputs]
    if not paths:
        raise MergeError("no input stores given")
    seen = [p.resolve() for p in paths]
    twice = next((p for i, p in enumerate(paths) if seen[i] in seen[:i]), None)
    if twice is not None:
        raise MergeError(f"{twice}: input store given twice")
    report = MergeReport()
    with ExitStack() as stack:
        readers = []
        for p in paths:
            store = stack.enter_context(_open_input(p, into))
            stack.enter_context(store.writer())  # a shard still being built is refused, not half-copied
            readers.append(stack.enter_context(closing(_Reader(store))))
        _plan(readers, None)  # differences between the inputs stop the merge before the target is created
        dst = stack.enter_context(MemoryStore(into))
        stack.enter_context(dst.writer())
        target = stack.enter_context(closing(_Reader(dst)))
        plan, report.identical = _plan(readers, target)
        for ns, src in plan.items():
            _copy(ns, src, dst, target.con)
            report.copied.setdefault(str(src.store.root), []).append(ns)
        report.incomplete = [ns for ns in plan if "build" in (dst.settings(ns) or {}) and not is_complete(dst, ns)]
        dst.compact()
    return report


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--into", required=True, help="the merged store directory (created if missing; may exist)")
    p.add_argument("stores", nargs="+", help="input store directories, e.g. stores/x.shard-* from `qgmem build --shard`")


def run(args: argparse.Namespace) -> int:
    report = merge_stores(args.into, args.stores)
    for src, names in report.copied.items():
        print(f"{src}: {len(names)} namespace(s) copied")
    if report.identical:
        print(f"{len(report.identical)} namespace(s) held identically more than once, taken once")
    if report.incomplete:
        print(f"warning: {len(report.incomplete)} merged namespace(s) have unextracted windows (their build "
              f"failed there; rerun `qgmem build` on the merged store): {report.incomplete[:5]}", file=sys.stderr)
    print(f"store: {args.into}; {sum(map(len, report.copied.values()))} namespace(s) merged")
    return 0
