"""Persistent memory store: one directory, one SQLite database (WAL) plus `.npy` embedding matrices.

Everything is kept per *namespace* (one conversation or user), so a namespace can be extended with new
sessions, rebuilt or deleted without touching the others. Writes that belong together (a window's
units and its done marker; traces and the units' trace fields) share one transaction, so a build
killed at any point resumes without duplicating or losing work. Embedding matrices are written to a
temporary file and renamed into place; their metadata row is committed after the rename.

Every unit records its *source*: the done key of the window it came from, which names the window's
content and the extraction settings. A build drops the units of sources that no longer exist (an
edited, deleted or re-extracted window), so the store never serves text the conversation no longer
holds. Deleted rows are overwritten on disk (`secure_delete`) and the WAL is truncated after a
forget, so a forgotten sentence is not left in the directory. One writer at a time: `writer()`
takes an exclusive lock file and names the process that holds it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from qgmem.errors import StoreBusy, StoreError
from qgmem.io import plain
from qgmem.locking import FileLock, LockHeld
from qgmem.store_vectors import VectorTables, safe_name
from qgmem.types import AtomicUnit, Conversation, MemoryTrace, conversation_from_dict, unit_from_dict

MEMO_UNITS = 100_000  # parsed units one store object keeps for the namespaces it read last
SCHEMA_VERSION = 2  # 2: units.src (the window done key a unit came from)

_SCHEMA = (Path(__file__).with_name("store_schema.sql")).read_text()


class MemoryStore(VectorTables):
    """Units, traces, embeddings (`VectorTables`), generic records and build state per namespace."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.emb_dir = self.root / "embeddings"
        self.emb_dir.mkdir(exist_ok=True)
        self.db_path = self.root / "store.sqlite"
        self._lock = threading.RLock()
        self._memo: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()  # (model, text hash) -> vector
        self._parsed: OrderedDict[str, dict[str, AtomicUnit]] = OrderedDict()  # ns -> unit record -> unit
        self._writer = FileLock(self.root / "writer.lock")
        try:
            self._db = sqlite3.connect(self.db_path, timeout=60.0, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA secure_delete=ON")
            self._db.executescript(_SCHEMA)
            row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.db_path}: not a readable qgmem store ({e}); move it away and rebuild") from None
        if row is None:
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) == 1:
            self._migrate_v1()
        elif int(row[0]) != SCHEMA_VERSION:
            raise StoreError(f"{self.db_path}: schema version {row[0]}, this qgmem reads {SCHEMA_VERSION}")

    def _migrate_v1(self) -> None:
        """v1 units have no source: give them none, so the next build re-extracts every window."""
        with self._tx() as db:
            cols = [r[1] for r in db.execute("PRAGMA table_info(units)").fetchall()]
            if "src" not in cols:
                db.execute("ALTER TABLE units ADD COLUMN src TEXT NOT NULL DEFAULT ''")
            db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))

    # ------------------------------------------------------------------ plumbing
    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction; rolled back on any exception."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def close(self) -> None:
        with self._lock:
            self._db.close()
        self._writer.release_all()

    @contextmanager
    def writer(self) -> Iterator[MemoryStore]:
        """Hold the store's write lock (re-entrant in this process). A second writer fails at once
        with the PID of the holder instead of repeating its work, paid LLM calls included."""
        try:
            with self._writer:
                yield self
        except LockHeld as e:
            raise StoreBusy(f"{self.root}: store is being built by {e.holder}; wait for it to finish") from None

    def compact(self) -> None:
        """Fold the WAL into the database and truncate it (after a forget: no old page stays behind)."""
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def __enter__(self) -> MemoryStore:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ namespaces / conversations
    def namespaces(self, with_conversation: bool = False) -> list[str]:
        """Every namespace holding anything (conversation, units, records or build state), sorted; or only
        those with a stored conversation (read from the table's index: no conversation is parsed)."""
        rows = self._query("SELECT ns FROM conversations ORDER BY 1" if with_conversation else
                           "SELECT ns FROM conversations UNION SELECT ns FROM units UNION SELECT ns FROM records "
                           "UNION SELECT ns FROM build_state ORDER BY 1")
        return [r[0] for r in rows]

    def put_conversation(self, conv: Conversation) -> None:
        data = json.dumps(plain(conv), ensure_ascii=False)
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO conversations VALUES (?, ?)", (conv.id, data))

    def get_conversation(self, ns: str) -> Conversation:
        rows = self._query("SELECT data FROM conversations WHERE ns=?", (ns,))
        if not rows:
            raise KeyError(f"{self.db_path}: no conversation stored for namespace {ns!r}")
        return conversation_from_dict(json.loads(rows[0][0]))

    def set_settings(self, ns: str, settings: dict[str, Any]) -> None:
        """The settings `ns` was built with (so forget and reopen rebuild it the same way)."""
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (f"settings:{ns}", json.dumps(settings)))

    def settings(self, ns: str) -> dict[str, Any] | None:
        rows = self._query("SELECT value FROM meta WHERE key=?", (f"settings:{ns}",))
        return json.loads(rows[0][0]) if rows else None

    # ------------------------------------------------------------------ units
    def add_units(self, ns: str, units: list[AtomicUnit], done_key: str | None = None) -> None:
        """Append units (in order) to `ns`; with `done_key`, mark that step done in the same transaction."""
        for u in units:
            if u.namespace != ns:
                raise StoreError(f"unit {u.id!r} has namespace {u.namespace!r}, not {ns!r}")
        with self._tx() as db:
            (start,) = db.execute("SELECT COALESCE(MAX(seq) + 1, 0) FROM units WHERE ns=?", (ns,)).fetchone()
            for i, u in enumerate(units):
                try:
                    db.execute("INSERT INTO units (ns, id, seq, data, src) VALUES (?, ?, ?, ?, ?)",
                               (ns, u.id, start + i, json.dumps(plain(u), ensure_ascii=False),
                                done_key or ""))
                except sqlite3.IntegrityError as e:
                    raise StoreError(f"namespace {ns!r}: unit id {u.id!r} already stored") from e
            if done_key is not None:
                db.execute("INSERT OR REPLACE INTO build_state VALUES (?, ?, ?)", (ns, done_key, time.time()))

    def units(self, ns: str) -> list[AtomicUnit]:
        """Units of `ns` in insertion order. Units are values (replaced, never mutated), so one whose
        record is unchanged since the last read is returned as the same object: a grown namespace does
        not parse its old records again (memo: the last read of recent namespaces, MEMO_UNITS in all)."""
        rows = self._query("SELECT data FROM units WHERE ns=? ORDER BY seq", (ns,))
        with self._lock:
            seen = self._parsed.pop(ns, {})
            self._parsed[ns] = {d: seen.get(d) or unit_from_dict(json.loads(d)) for (d,) in rows}
            while sum(map(len, self._parsed.values())) > MEMO_UNITS and len(self._parsed) > 1:
                self._parsed.popitem(last=False)
            return list(self._parsed[ns].values())

    def unit_sources(self, ns: str) -> dict[str, list[str]]:
        """Source (window done key) -> ids of the units it produced, in insertion order."""
        out: dict[str, list[str]] = {}
        for uid, src in self._query("SELECT id, src FROM units WHERE ns=? ORDER BY seq", (ns,)):
            out.setdefault(src, []).append(uid)
        return out

    def drop_sources(self, ns: str, sources: list[str]) -> int:
        """Remove the units and done markers of `sources` (stale windows); returns how many units went.
        Traces and embeddings are recomputed by the build that follows."""
        if not sources:
            return 0
        self._parsed.pop(ns, None)
        removed = 0
        with self._tx() as db:
            for src in sources:
                removed += db.execute("DELETE FROM units WHERE ns=? AND src=?", (ns, src)).rowcount
                db.execute("DELETE FROM build_state WHERE ns=? AND step_key=?", (ns, src))
        return removed

    def reorder_units(self, ns: str, ids: list[str]) -> None:
        """Give the units of `ns` the order of `ids` (all of them): the conversation's order, so
        that units, traces and latest states do not depend on the order windows were built in."""
        with self._tx() as db:
            for i, uid in enumerate(ids):
                if db.execute("UPDATE units SET seq=? WHERE ns=? AND id=?", (i, ns, uid)).rowcount != 1:
                    raise StoreError(f"namespace {ns!r}: cannot reorder unknown unit {uid!r}")

    def update_units(self, ns: str, units: list[AtomicUnit]) -> None:
        """Rewrite stored units in place (same ids, same order); used for trace fields."""
        with self._tx() as db:
            self._update_units(db, ns, units)

    def _update_units(self, db: sqlite3.Connection, ns: str, units: list[AtomicUnit]) -> None:
        for u in units:
            cur = db.execute("UPDATE units SET data=? WHERE ns=? AND id=?",
                             (json.dumps(plain(u), ensure_ascii=False), ns, u.id))
            if cur.rowcount != 1:
                raise StoreError(f"namespace {ns!r}: cannot update unknown unit {u.id!r}")

    # ------------------------------------------------------------------ traces
    def put_traces(self, ns: str, traces: list[MemoryTrace], units: list[AtomicUnit] | None = None) -> None:
        """Replace all traces of `ns`; `units` (with their trace fields set) are rewritten in the same transaction."""
        with self._tx() as db:
            db.execute("DELETE FROM traces WHERE ns=?", (ns,))
            for i, t in enumerate(traces):
                db.execute("INSERT INTO traces VALUES (?, ?, ?, ?)",
                           (ns, t.id, i, json.dumps(plain(t), ensure_ascii=False)))
            if units is not None:
                self._update_units(db, ns, units)

    def traces(self, ns: str) -> list[MemoryTrace]:
        rows = self._query("SELECT data FROM traces WHERE ns=? ORDER BY seq", (ns,))
        return [MemoryTrace(**json.loads(r[0])) for r in rows]

    # ------------------------------------------------------------------ generic records
    def put_records(self, ns: str, kind: str, records: list[dict[str, Any]]) -> None:
        """Replace the records of `ns`/`kind` (JSON-able dicts, e.g. AnchorMem facts, events, chunks)."""
        with self._tx() as db:
            db.execute("DELETE FROM records WHERE ns=? AND kind=?", (ns, kind))
            for i, r in enumerate(records):
                db.execute("INSERT INTO records VALUES (?, ?, ?, ?)", (ns, kind, i, json.dumps(r, ensure_ascii=False)))

    def get_records(self, ns: str, kind: str) -> list[dict[str, Any]]:
        rows = self._query("SELECT data FROM records WHERE ns=? AND kind=? ORDER BY seq", (ns, kind))
        return [json.loads(r[0]) for r in rows]

    # ------------------------------------------------------------------ build state and failures
    def mark_done(self, ns: str, step_key: str) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO build_state VALUES (?, ?, ?)", (ns, step_key, time.time()))

    def is_done(self, ns: str, step_key: str) -> bool:
        return bool(self._query("SELECT 1 FROM build_state WHERE ns=? AND step_key=?", (ns, step_key)))

    def version(self) -> int:
        """A number that changes whenever another connection (e.g. another process) commits to the
        store: what this connection read stays current while it is unchanged (SQLite's data_version)."""
        return int(self._query("PRAGMA data_version")[0][0])

    def done_keys(self, ns: str) -> set[str]:
        return {r[0] for r in self._query("SELECT step_key FROM build_state WHERE ns=?", (ns,))}

    def clear_done(self, ns: str, prefix: str) -> None:
        """Forget done markers starting with `prefix` (to force a step to run again)."""
        with self._tx() as db:
            db.execute("DELETE FROM build_state WHERE ns=? AND substr(step_key, 1, ?)=?", (ns, len(prefix), prefix))

    def record_failure(self, ns: str, key: str, error: str, raw: str | None) -> None:
        """Keep a failed step (e.g. a window whose LLM output stayed invalid) with its raw output."""
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO failures VALUES (?, ?, ?, ?, ?)", (ns, key, error, raw, time.time()))

    def drop_records(self, ns: str, keep_prefix: str | None = None) -> None:
        """Remove the generic records of `ns` (derived state such as AnchorMem facts and events), except
        the kinds starting with `keep_prefix`."""
        with self._tx() as db:
            if keep_prefix:
                db.execute("DELETE FROM records WHERE ns=? AND substr(kind, 1, ?) != ?", (ns, len(keep_prefix), keep_prefix))
            else:
                db.execute("DELETE FROM records WHERE ns=?", (ns,))

    def record_kinds(self, ns: str) -> list[str]:
        return [r[0] for r in self._query("SELECT DISTINCT kind FROM records WHERE ns=? ORDER BY kind", (ns,))]

    def clear_failure(self, ns: str, key: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM failures WHERE ns=? AND key=?", (ns, key))

    def failures(self, ns: str) -> list[dict[str, Any]]:
        rows = self._query("SELECT key, error, raw, at FROM failures WHERE ns=? ORDER BY key", (ns,))
        return [{"key": k, "error": e, "raw": r, "at": a} for k, e, r, a in rows]

    # ------------------------------------------------------------------ deletion
    def delete_namespace(self, ns: str) -> None:
        """Remove everything of `ns`, embedding files included."""
        self._memo.clear()
        self._parsed.pop(ns, None)
        files = [r[0] for r in self._query("SELECT file FROM embeddings WHERE ns=?", (ns,))]
        with self._tx() as db:
            for table in ("conversations", "units", "traces", "embeddings", "records", "build_state", "failures"):
                db.execute(f"DELETE FROM {table} WHERE ns=?", (ns,))
            db.execute("DELETE FROM meta WHERE key=?", (f"settings:{ns}",))
        for f in files:
            (self.emb_dir / f).unlink(missing_ok=True)
        for stray in self.emb_dir.glob(f"{safe_name(ns)}.*.npy"):
            stray.unlink(missing_ok=True)
        self.compact()
