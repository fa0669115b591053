"""The server's operations over one `MemoryPipeline`, shared by the HTTP routes and the MCP tools.

Every operation checks, in this order and before anything is read or written: the key (401), the
namespace's spelling (422), the key's right to it (403, the same whether it exists or not), the
request's sizes and ids (422, naming the field), then its locks (503 when busy). Retrieval, answers,
forgetting and history are the pipeline's own calls, so a served namespace answers exactly as
`MemoryPipeline` on the same store does.

Durability: the pipeline commits every window's units with its done marker in one SQLite (WAL)
transaction, and a reply is sent only after `add()` returned, so an acknowledged write is on disk
before its client hears of it. A write that a kill interrupted is finished on the namespace's first
use after a restart (the build resumes from its done markers); a complete namespace is served as
stored, nothing rebuilt. A write that fails part way is undone (its new turns forgotten, replaced
sessions restored) before the error is returned, so a refused request leaves nothing half-written.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from qgmem import __version__
from qgmem.construct.build import BuildConfig, MemoryIncomplete, is_complete, pending_windows, stored_config
from qgmem.errors import UserError
from qgmem.llm.base import LLMError
from qgmem.pipeline import MemoryPipeline
from qgmem.serve.config import Limits
from qgmem.serve.errors import ServeError
from qgmem.serve.locks import Gate
from qgmem.serve.requests import append, check_add, ident, text, when, whole_sessions
from qgmem.serve.schemas import Message, SessionIn
from qgmem.serve.tenants import NAMESPACE_RE, ApiKey, Tenants
from qgmem.store import StoreBusy
from qgmem.io import plain
from qgmem.types import Conversation, Question, Session

log = logging.getLogger("qgmem.serve")


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


class MemoryService:
    def __init__(self, pipe: MemoryPipeline, tenants: Tenants, limits: Limits | None = None, answerer: str = ""):
        self.pipe, self.tenants = pipe, tenants
        self.limits = limits or Limits()
        self.gate = Gate(self.limits.max_in_flight, self.limits.lock_timeout_s, self.limits.retry_after_s)
        self.answerer = answerer or ("checkpoint" if pipe.model is not None else f"chat:{getattr(pipe.llm, 'model', '?')}")
        self._ready_ns: set[str] = set()  # namespaces found complete (or recovered) in this process

    # ---------------------------------------------------------------- checks
    def who(self, presented: str | None) -> ApiKey | None:
        return self.tenants.identify(presented)

    def _ns(self, who: ApiKey | None, namespace: object) -> str:
        lim = self.limits.max_id_chars
        if not isinstance(namespace, str) or not NAMESPACE_RE.fullmatch(namespace) or len(namespace) > lim:
            raise ServeError(422, f"namespace must be 1-{lim} characters of letters, digits and _ . : @ -, "
                             "starting with a letter or digit", "namespace")
        self.tenants.check(who, namespace)
        return namespace

    def _question(self, ns: str, question: str, question_time: str | None) -> Question:
        text(question, "question", self.limits.max_question_chars, "max_question_chars")
        return Question(id=f"q-{uuid.uuid4().hex[:8]}", text=question, answers=[], category="",
                        question_time=when(question_time, "question_time"), conversation_id=ns)

    # ---------------------------------------------------------------- errors
    def _fail(self, e: BaseException, ns: str) -> ServeError:
        """The refusal an exception from the pipeline stands for."""
        if isinstance(e, ServeError):
            return e
        if isinstance(e, StoreBusy):  # its message names the store's path and the PID: not the client's business
            return ServeError(409, f"namespace {ns!r}: the store is being rebuilt by another process; retry when it "
                              "is done", "namespace")
        if isinstance(e, MemoryIncomplete):
            return ServeError(409, str(e), "namespace")
        if isinstance(e, KeyError):  # the pipeline's message lists the store's namespaces: other tenants'
            return ServeError(404, f"namespace {ns!r} holds no memories", "namespace")
        if isinstance(e, LLMError):
            return ServeError(502, f"the answer backend failed: {' '.join(str(e).split())[:300]}")
        if isinstance(e, (UserError, ValueError)):
            return ServeError(422, " ".join(str(e).split())[:500])
        log.exception("namespace %r: unexpected error", ns)
        return ServeError(500, f"internal error ({type(e).__name__}); the request changed nothing")

    def _stored(self, ns: str) -> Conversation | None:
        try:
            return self.pipe.store.get_conversation(ns)
        except KeyError:
            return None

    def _ready(self, ns: str) -> None:
        """404 for a namespace without memories; on its first use in this process, finish a write that a
        kill interrupted (the build resumes from its done markers; a complete namespace is left as is)."""
        if ns in self._ready_ns:
            return
        with self.gate.write(ns):
            if ns in self._ready_ns:
                return
            conv = self._stored(ns)
            if conv is None:
                raise ServeError(404, f"namespace {ns!r} holds no memories", "namespace")
            cfg = stored_config(self.pipe.store, ns) or BuildConfig(extractor=self.pipe.retrieval.extractor)
            done = is_complete(self.pipe.store, ns) and (cfg.extractor != "rule" or
                                                         not pending_windows(conv, self.pipe.store, cfg))
            if not done:
                log.warning("namespace %r: finishing a write that was interrupted", ns)
                try:
                    self.pipe.add(conv, namespace=ns)
                except Exception as e:  # noqa: BLE001 - reported as the refusal it stands for
                    raise self._fail(e, ns) from e
            self._ready_ns.add(ns)

    # ---------------------------------------------------------------- reads
    def namespaces(self, who: ApiKey | None) -> list[str]:
        with self.gate.admit():
            return self.tenants.visible(who, self.pipe.namespaces())

    def _reply(self, ns: str, wm: Any, t0: float) -> dict[str, Any]:
        items = []
        for it in wm.items:
            u = it.unit
            items.append({"label": it.label, "text": it.text, "unit_id": u.id if u else None,
                          "turn_ids": list(it.turn_ids), "session_id": u.session_id if u else None,
                          "time": u.utterance_time if u else it.meta.get("date"),
                          "fact_time": [u.fact_time_start, u.fact_time_end] if u else [None, None],
                          "superseded": bool(it.meta.get("superseded", False)), "trajectory": list(it.trajectory),
                          "source": it.source_text, "score": float(it.score)})
        meta = plain(wm.meta)
        timings = {"total_ms": _ms(t0), "retrieval_ms": round(float(meta.get("latency_ms", 0.0)), 3)}
        return {"namespace": ns, "question": wm.question.text, "items": items, "context_tokens": wm.context_tokens,
                "timings": timings, "meta": meta}

    def _read(self, who: ApiKey | None, namespace: str, question: str, question_time: str | None,
              call: Callable[[Any], Any]) -> tuple[str, Any, float]:
        """`call(question)` on the pipeline under the admission gate and the namespace's read lock; a
        pipeline error becomes the refusal it stands for. Returns (namespace, result, start time)."""
        ns = self._ns(who, namespace)
        q = self._question(ns, question, question_time)
        t0 = time.perf_counter()
        with self.gate.admit():
            self._ready(ns)
            with self.gate.read(ns):
                try:
                    return ns, call(q), t0
                except Exception as e:  # noqa: BLE001
                    raise self._fail(e, ns) from e

    def search(self, who: ApiKey | None, namespace: str, question: str, question_time: str | None = None
               ) -> dict[str, Any]:
        ns, wm, t0 = self._read(who, namespace, question, question_time, self.pipe.working_memory)
        return self._reply(ns, wm, t0)

    def answer(self, who: ApiKey | None, namespace: str, question: str, question_time: str | None = None
               ) -> dict[str, Any]:
        ns, ans, t0 = self._read(who, namespace, question, question_time, self.pipe.answer)
        out = self._reply(ns, ans.working_memory, t0)
        by_label = {it.label: it for it in ans.working_memory.items}
        cited = list(dict.fromkeys(t for lab in ans.cited_labels for t in by_label[lab].turn_ids))
        out.update(answer=ans.text, cited_labels=list(ans.cited_labels), cited_turn_ids=cited,
                   invalid_labels=list(ans.invalid_labels), raw=ans.raw)
        return out

    def history(self, who: ApiKey | None, namespace: str, unit_id: str) -> dict[str, Any]:
        ns = self._ns(who, namespace)
        text(unit_id, "unit_id", 4 * self.limits.max_id_chars, "max_id_chars")
        if unit_id.rsplit("/", 2)[0] != ns:  # unit ids are <namespace>/<session>#w<i>/u<j>
            raise ServeError(404, f"unit_id: no unit {unit_id[:200]!r} in namespace {ns!r}", "unit_id")
        with self.gate.admit():
            self._ready(ns)
            with self.gate.read(ns):
                try:
                    states = self.pipe.history(unit_id)
                except KeyError as e:
                    raise ServeError(404, f"unit_id: {e.args[0]}", "unit_id") from None
        return {"namespace": ns, "unit_id": unit_id, "states": [plain(u) for u in states]}

    def messages(self, who: ApiKey | None, namespace: str) -> dict[str, Any]:
        ns = self._ns(who, namespace)
        with self.gate.admit(), self.gate.read(ns):
            conv = self._stored(ns)
        if conv is None:
            raise ServeError(404, f"namespace {ns!r} holds no memories", "namespace")
        return {"namespace": ns, "sessions": [plain(s) for s in conv.sessions]}

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "in_flight": self.gate.in_flight, "refused": self.gate.refused}

    def version(self) -> dict[str, Any]:
        r = self.pipe.retrieval
        return {"qgmem": __version__, "api": "v1", "answerer": self.answerer, "k": self.pipe.k,
                "retrieval": {"embedder": r.embedder, "channels": list(r.channels), "extractor": r.extractor,
                              "rerank": r.rerank.kind}}

    # ---------------------------------------------------------------- writes
    def add(self, who: ApiKey | None, namespace: str, messages: list[Message] | None = None,
            session_id: str | None = None, sessions: list[SessionIn] | None = None) -> dict[str, Any]:
        ns = self._ns(who, namespace)
        check_add(self.limits, messages, session_id, sessions)
        t0 = time.perf_counter()
        with self.gate.admit():
            self._ready_or_new(ns)
            with self.gate.write(ns):
                old = self._stored(ns)
                if messages is not None:
                    new, added, dups = append(old, messages, session_id)
                else:
                    new, added, dups = whole_sessions(old, sessions or [])
                before = {u.id for u in self.pipe.store.units(ns)} if old is not None else set()
                if new:
                    self._write(ns, old, new, added)
                    units = [u.id for u in self.pipe.store.units(ns) if u.id not in before]
                else:
                    units = []
        return {"namespace": ns, "session_ids": [s.id for s in new], "turn_ids": added, "duplicate_ids": dups,
                "unit_ids": units, "timings": {"total_ms": _ms(t0)}}

    def _ready_or_new(self, ns: str) -> None:
        try:
            self._ready(ns)
        except ServeError as e:
            if e.status != 404:
                raise

    def _write(self, ns: str, old: Conversation | None, new: list[Session], added: list[str]) -> None:
        """`pipe.add`, undone when it fails part way: the request's new turns are forgotten and the
        sessions it replaced are put back, so the stored conversation is the one before it."""
        try:
            self.pipe.add(new, namespace=ns)
        except Exception as e:  # noqa: BLE001 - undone, then reported as the refusal it stands for
            err = self._fail(e, ns)
            if not isinstance(e, StoreBusy):
                self._undo(ns, old, added)
            raise err from e
        self._ready_ns.add(ns)

    def _undo(self, ns: str, old: Conversation | None, added: list[str]) -> None:
        try:
            now = self._stored(ns)
            if now is None:
                return
            if old is None:
                self.pipe.forget(ns)
                return
            gone = [t for t in added if t in {x.id for x in now.turns()}]
            if gone:
                self.pipe.forget(ns, turn_ids=gone)
            if self._stored(ns) != old:
                self.pipe.add(list(old.sessions), namespace=ns)
        except Exception:  # noqa: BLE001 - the original error is what the client hears
            log.exception("namespace %r: a failed write could not be undone", ns)
            self._ready_ns.discard(ns)

    def forget(self, who: ApiKey | None, namespace: str, session_id: str | None = None,
               turn_ids: list[str] | None = None) -> dict[str, Any]:
        ns = self._ns(who, namespace)
        ident(session_id, "session_id", self.limits)
        if turn_ids is not None:
            if not turn_ids or len(turn_ids) > self.limits.max_messages:
                raise ServeError(422, f"turn_ids: give 1-{self.limits.max_messages} ids", "turn_ids")
            for i, t in enumerate(turn_ids):
                ident(t, f"turn_ids[{i}]", self.limits)
        with self.gate.admit(), self.gate.exclusive():  # forgetting clears caches every namespace shares
            conv = self._stored(ns)
            if conv is None:
                raise ServeError(404, f"namespace {ns!r} holds no memories", "namespace")
            if session_id is not None and session_id not in {s.id for s in conv.sessions}:
                raise ServeError(404, f"session_id: namespace {ns!r} has no session {session_id!r}", "session_id")
            missing = sorted(set(turn_ids or []) - {t.id for t in conv.turns()})
            if missing:
                raise ServeError(404, f"turn_ids: namespace {ns!r} has no turn(s) {missing[:10]}", "turn_ids")
            try:
                self.pipe.forget(ns, session_id, turn_ids)
            except Exception as e:  # noqa: BLE001
                raise self._fail(e, ns) from e
            left = self._stored(ns)
            if left is None:
                self._ready_ns.discard(ns)
        what = f"session {session_id}" if session_id else (f"{len(turn_ids)} turn(s)" if turn_ids else "namespace")
        return {"namespace": ns, "forgotten": what, "remaining_turns": len(left.turns()) if left else 0}
