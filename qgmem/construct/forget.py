"""Forgetting: a conversation, a session or some turns leave the memory with everything derived from them.

Deleting is a promise that the text is gone, not hidden: the conversation record is rewritten without
it, the build drops every unit whose window held it (context turns included) and re-extracts those
windows from what remains, traces are recomputed, the retrieval caches and other derived records of the
namespace (whose keys or payloads may quote the text) are dropped to be rebuilt on demand, the LLM
replies cached for the windows that held it are deleted from the response cache, and the database is
compacted so no old page keeps a copy.
"""

from __future__ import annotations

import dataclasses

from qgmem.construct.cache_keys import PREFIX, all_sources, forget_cache_entries
from qgmem.construct.build import BuildConfig, build_memory, stored_config
from qgmem.construct.rule import forget_remembered_claims
from qgmem.construct.report import BuildReport
from qgmem.llm.base import ChatBackend
from qgmem.store import MemoryStore
from qgmem.types import Conversation


def without(conv: Conversation, session_id: str | None = None, turn_ids: list[str] | None = None) -> Conversation:
    """`conv` minus a session or some turns (empty sessions left out); unknown ids are an error."""
    if session_id is not None and session_id not in {s.id for s in conv.sessions}:
        raise KeyError(f"namespace {conv.id!r} has no session {session_id!r}")
    gone = set(turn_ids or [])
    unknown = gone - {t.id for t in conv.turns()}
    if unknown:
        raise KeyError(f"namespace {conv.id!r} has no turn(s) {sorted(unknown)}")
    sessions = []
    for s in conv.sessions:
        if s.id == session_id:
            continue
        turns = [t for t in s.turns if t.id not in gone]
        if turns:
            sessions.append(dataclasses.replace(s, turns=turns))
    questions = [q for q in conv.questions if not gone.intersection(q.evidence)]
    return dataclasses.replace(conv, sessions=sessions, questions=questions)


def forget(store: MemoryStore, namespace: str, session_id: str | None = None, turn_ids: list[str] | None = None,
           config: BuildConfig | None = None, llm: ChatBackend | None = None, embedder=None) -> BuildReport:
    """Forget a whole namespace, one session of it, or some turns. With a session or turns, the
    memory is rebuilt from what remains with the settings it was built with (the windows that held
    the text are extracted again, so an LLM memory needs its `llm`); the text itself is gone before
    any extraction starts."""
    report = BuildReport()
    forget_remembered_claims()  # this process's claims by content: the forgotten words must not come back from RAM
    with store.writer():
        conv = None if session_id is None and not turn_ids else \
            without(store.get_conversation(namespace), session_id, turn_ids)
        if conv is None or not conv.sessions:  # nothing of the namespace remains
            forget_cache_entries(store, namespace, all_sources(store, namespace))
            store.delete_namespace(namespace)
            return report
        store.drop_embeddings(namespace, keep=("claim",))
        store.drop_records(namespace, keep_prefix=PREFIX)  # the build below forgets the cached replies
        cfg = config or stored_config(store, namespace) or BuildConfig()
        try:
            build_memory(conv, cfg.extractor, llm=llm, store=store, config=cfg, embedder=embedder, report=report)
        finally:
            store.compact()
    return report


# ---------------------------------------------------------------------------------------------
# `qgmem forget`


def add_arguments(p) -> None:
    p.add_argument("--store", required=True, help="store directory")
    p.add_argument("--namespace", required=True, help="the conversation or user to forget (or to forget from)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--session", default=None, help="forget only this session")
    g.add_argument("--turns", nargs="+", default=None, help="forget only these turn ids")


def run(args) -> int:
    from pathlib import Path

    from qgmem.store import StoreError

    if not (Path(args.store) / "store.sqlite").exists():
        raise StoreError(f"{args.store}: no qgmem store here")
    with MemoryStore(args.store) as store:
        if args.namespace not in store.namespaces():
            raise StoreError(f"{args.store}: no namespace {args.namespace!r} (have {store.namespaces()[:20]})")
        try:
            report = forget(store, args.namespace, args.session, args.turns)
        except KeyError as e:
            raise StoreError(f"{args.store}: {e.args[0]}") from None
    what = f"session {args.session!r} of " if args.session else (f"{len(args.turns)} turn(s) of " if args.turns else "")
    print(f"forgot {what}{args.namespace!r}; {report.dropped_units} unit(s) dropped, "
          f"{report.phases['extraction'].windows} window(s) extracted again")
    return 0
