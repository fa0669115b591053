"""QGMem memory construction: dialogue -> windows -> atomic units -> memory traces.

`build_memory` is resumable, incremental and content-addressed: a window's done key names its
position, the content of its turns and the extraction settings, and its units are committed together
with that key. A killed build resumes where it stopped; a conversation that gained sessions or turns
extracts only the new windows; an edited or deleted turn changes its windows' keys, so their old units
are dropped and the windows extracted again; other settings (window size, extractor, LLM, prompt)
change every key, so the memory is rebuilt. Units are kept in conversation order whatever the order
of builds, failures and resumes, so traces and latest states equal those of a fresh build. Traces
read unit fields only (no embeddings) and are recomputed (cheap) whenever the units changed.
A namespace is *complete* only when every window is extracted and its traces are current; a build
with failed windows leaves it incomplete, and readers refuse it unless told to accept partial memory.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

from qgmem.config import from_dict, to_dict
from qgmem.construct.change_probe import ProbeReadings, build_readings, probe_digest
from qgmem.construct.cache_keys import forget_cache_entries, remember_cache_keys
from qgmem.construct.extractor import Extractor, WindowResult
from qgmem.construct.llm_extract import LLMExtractConfig, LLMExtractor, rejected_summary
from qgmem.construct.nlp import nlp_identity
from qgmem.construct.report import BuildReport, PhaseStats, usage_delta, usage_snapshot
from qgmem.construct.rule import RULE_VERSION, RULE_WORDS, RuleConfig, RuleExtractor
from qgmem.construct.trace_key import trace_key_parts
from qgmem.construct.traces import TraceConfig, build_traces, group_traces
from qgmem.construct.windows import Window, make_windows
from qgmem.words import digest as words_digest
from qgmem.data.validate import InputLimits, check_conversation
from qgmem.errors import UserError
from qgmem.llm.base import ChatBackend
from qgmem.llm.config import LLMConfig
from qgmem.store import MemoryStore
from qgmem.types import AtomicUnit, Conversation, MemoryTrace

__all__ = ["BuildConfig", "BuildReport", "LLMExtractor", "PhaseStats", "RuleExtractor", "TraceConfig", "Window",
           "build_memory", "make_windows"]


class TextEmbedder(Protocol):
    name: str

    def encode(self, texts: list[str], show_progress: bool = False) -> np.ndarray: ...


@dataclass
class BuildConfig:
    extractor: str = "rule"  # "rule" | "llm"
    consolidation: str = "auto"  # "rule" | "llm" | "auto" (= the extractor's kind)
    window_size: int = 6
    window_overlap: int = 2
    embedder: str = "minilm"
    rule: RuleConfig = field(default_factory=RuleConfig)
    llm_extract: LLMExtractConfig = field(default_factory=LLMExtractConfig)
    traces: TraceConfig = field(default_factory=TraceConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    limits: InputLimits = field(default_factory=InputLimits)

    def __post_init__(self) -> None:
        if self.extractor not in ("rule", "llm"):
            raise ValueError(f"BuildConfig.extractor: {self.extractor!r} is not 'rule' or 'llm'")
        if self.consolidation not in ("rule", "llm", "auto"):
            raise ValueError(f"BuildConfig.consolidation: {self.consolidation!r} is not 'rule', 'llm' or 'auto'")


class MemoryIncomplete(RuntimeError, UserError):
    """A namespace whose build left windows unextracted (e.g. the LLM server failed)."""

    def __init__(self, ns: str, what: str, first_failure: str = "?"):
        super().__init__(f"namespace {ns!r}: {what} (first failure: {first_failure}); build again (add() or "
                         "qgmem build) to retry, or allow a partial memory (allow_partial)")

    @classmethod
    def from_report(cls, ns: str, report: BuildReport) -> MemoryIncomplete:
        first = next((f["error"] for f in report.failures if f["namespace"] == ns), "?")
        return cls(ns, f"{report.incomplete[ns]} window(s) could not be extracted", first)


TRACES_DONE = "traces"  # build-state marker: the traces are current for the stored units
COMPLETE = "complete"  # build-state marker: every window extracted and the traces current


def conversation_windows(conv: Conversation, size: int = 6, overlap: int = 2) -> list[Window]:
    return [w for s in conv.sessions for w in make_windows(s, size, overlap)]


def extraction_identity(extractor: Extractor, cfg: BuildConfig) -> str:
    """What decides a window's units besides its turns: window shape, extractor kind and settings,
    and for an LLM extractor the model, server, request extras and prompt text."""
    parts: dict[str, Any] = {"window": [cfg.window_size, cfg.window_overlap], "kind": getattr(extractor, "name", "?")}
    if isinstance(extractor, RuleExtractor):
        parts["rule"] = asdict(extractor.config)
        parts["rule_version"] = RULE_VERSION
        parts["rule_words"] = words_digest(RULE_WORDS)
        parts["nlp"] = nlp_identity(extractor.config.nlp_model)  # package==version: another model rebuilds
    elif isinstance(extractor, LLMExtractor):
        from qgmem.llm.cache import backend_identity

        inner = getattr(extractor.backend, "inner", extractor.backend)
        parts.update(llm=backend_identity(inner), settings=asdict(extractor.config),
                     prompt=hashlib.sha1(extractor.template.encode()).hexdigest())
    else:
        parts["custom"] = str(getattr(extractor, "identity", type(extractor).__name__))
    return json.dumps(parts, sort_keys=True, default=str)


def window_done_key(window: Window, identity: str) -> str:
    """`extract:<session>#w<i>@<digest of the window's turns, session date and the identity>`."""
    turns = [[t.id, t.speaker, t.text, t.image_caption] for t in window.turns]
    blob = json.dumps([identity, window.session_date, window.session_date_text, len(window.context_turns), turns],
                      ensure_ascii=False)
    return f"extract:{window.key}@{hashlib.sha1(blob.encode()).hexdigest()[:16]}"


def pending_windows(conv: Conversation, store: MemoryStore, cfg: BuildConfig,
                    extractor: Extractor | None = None) -> list[Window]:
    """Windows of `conv` whose current content has no units in the store yet."""
    identity = extraction_identity(extractor or RuleExtractor(cfg.rule), cfg)
    done = store.done_keys(conv.id)
    return [w for w in conversation_windows(conv, cfg.window_size, cfg.window_overlap)
            if window_done_key(w, identity) not in done]


# trace settings stores built before traces were grouped by state class still hold (they meant nothing since)
RETIRED_TRACE_KEYS = {"neighbours", "relation_threshold", "neighbour_space", "state_relations"}


def stored_config(store: MemoryStore, ns: str) -> BuildConfig | None:
    """The BuildConfig `ns` was last built with, or None for a namespace built before it was recorded."""
    got = (store.settings(ns) or {}).get("build")
    if not got:
        return None
    traces = {k: v for k, v in dict(got.get("traces") or {}).items() if k not in RETIRED_TRACE_KEYS}
    return from_dict(BuildConfig, {**got, "traces": traces}, f"{store.db_path}: settings of {ns!r}")


def is_complete(store: MemoryStore, ns: str) -> bool:
    """Every window of the stored conversation extracted and the traces current."""
    return store.is_done(ns, COMPLETE)


def _make_extractor(kind: str | Extractor, cfg: BuildConfig, backend: ChatBackend | None) -> Extractor:
    if not isinstance(kind, str):
        return kind
    if kind == "rule":
        return RuleExtractor(cfg.rule)
    if kind == "llm":
        if backend is None:
            raise ValueError("extractor='llm' needs an LLM backend (llm=...)")
        return LLMExtractor(backend, cfg.llm_extract)
    raise ValueError(f"unknown extractor {kind!r} (expected 'rule' or 'llm')")


def _traces_key(units: list[AtomicUnit], sources: list[str], cfg: BuildConfig, consolidation: str) -> str:
    """Names the units (by id and source window content) and the trace settings."""
    h = hashlib.sha1(json.dumps([[u.id for u in units], sources, asdict(cfg.traces), consolidation,
                                 cfg.embedder, *trace_key_parts(), probe_digest(cfg.traces.change_probe)]).encode())
    return f"traces@{h.hexdigest()[:16]}"


def build_memory(
    conversation: Conversation,
    extractor: str | Extractor = "rule",
    llm: ChatBackend | None = None,
    store: MemoryStore | None = None,
    config: BuildConfig | None = None,
    embedder: TextEmbedder | None = None,
    report: BuildReport | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[AtomicUnit], list[MemoryTrace]]:
    """Build (or extend, update, or resume) the memory of one conversation; returns its units and traces.

    With no `store`, a temporary one is used and discarded. `progress(n)` is called after every n
    windows processed. Failed LLM windows are recorded in the store and `report`, not marked done,
    and leave the namespace incomplete (`is_complete`). `embedder` is accepted for callers that pass
    one; construction encodes nothing since traces are grouped from unit fields.
    """
    cfg = config or BuildConfig(extractor=extractor if isinstance(extractor, str) else "rule")
    if store is None:
        with tempfile.TemporaryDirectory(prefix="qgmem-build-") as tmp, MemoryStore(tmp) as st:
            return build_memory(conversation, extractor, llm, st, cfg, embedder, report, progress)
    report = report if report is not None else BuildReport()
    source = str(conversation.meta.get("source") or "<input>")
    report.warnings += check_conversation(conversation, source, cfg.limits)  # before anything is written
    if llm is None and (extractor == "llm" or cfg.consolidation == "llm"):
        from qgmem.llm import make_backend

        llm = make_backend(cfg.llm)
    ex = _make_extractor(extractor, cfg, llm)
    plan = _plan(conversation, ex, store, cfg)
    current = _current_memory(conversation, store, cfg, plan, report, _consolidation(cfg, extractor, ex))
    if current is not None:  # nothing to do: no write lock, so readers of one store never collide
        return current
    with store.writer():
        if store.version() != plan.version:  # another process wrote since the done markers were read
            plan.done = store.done_keys(conversation.id)
        sources = _extract(conversation, ex, llm, store, cfg, report, progress, plan)
        return _consolidate(conversation, extractor, ex, llm, store, cfg, report, sources)


@dataclass
class _Plan:
    """A build's windows and their done keys, and the done markers stored when it started: computed
    and read once per build (a 10,000-turn namespace has thousands of windows)."""

    windows: list[Window]
    keys: list[str]  # per window: its done key
    done: set[str]  # the namespace's stored done markers
    version: int  # the store's version when `done` was read


def _plan(conversation: Conversation, ex: Extractor, store: MemoryStore, cfg: BuildConfig) -> _Plan:
    identity = extraction_identity(ex, cfg)
    windows = conversation_windows(conversation, cfg.window_size, cfg.window_overlap)
    version = store.version()
    return _Plan(windows, [window_done_key(w, identity) for w in windows], store.done_keys(conversation.id), version)


def _consolidation(cfg: BuildConfig, extractor: str | Extractor, ex: Extractor) -> str:
    if cfg.consolidation != "auto":
        return cfg.consolidation
    return "llm" if (extractor == "llm" or getattr(ex, "name", "") == "llm") else "rule"


def _current_memory(conversation: Conversation, store: MemoryStore, cfg: BuildConfig, plan: _Plan,
                    report: BuildReport, consolidation: str) -> tuple[list[AtomicUnit], list[MemoryTrace]] | None:
    """The stored memory when it is complete and was built from exactly this conversation with these
    settings (the same window keys) and its traces by today's trace rules; None when a build has work to
    do. The window keys are compared before the stored conversation is loaded: a grown conversation
    differs there already."""
    ns = conversation.id
    if not is_complete(store, ns) or store.settings(ns) != {"build": to_dict(cfg)}:
        return None
    if set(plan.keys) != {k for k in plan.done if k.startswith("extract:")}:
        return None
    try:
        if store.get_conversation(ns) != conversation:
            return None
    except KeyError:
        return None
    units, by_source = store.units(ns), store.unit_sources(ns)
    if not store.is_done(ns, _traces_key(units, [k for k in plan.keys if k in by_source], cfg, consolidation)):
        return None  # the trace rules, words or settings changed since: regroup (nothing is extracted again)
    traces = store.traces(ns)
    report.add(ns, "extraction", PhaseStats(units=len(units), resumed_windows=len(plan.keys)))
    report.add(ns, "embedding", PhaseStats())
    report.add(ns, "consolidation", PhaseStats(traces=len(traces)))
    return units, traces


def _extract(conversation: Conversation, ex: Extractor, llm: ChatBackend | None, store: MemoryStore,
             cfg: BuildConfig, report: BuildReport, progress: Callable[[int], None] | None, plan: _Plan) -> list[str]:
    """Bring the stored units in line with the conversation; returns the window done keys in order."""
    ns = conversation.id
    store.put_conversation(conversation)
    store.set_settings(ns, {"build": to_dict(cfg)})
    speakers = list(conversation.speakers) or sorted({t.speaker for t in conversation.turns()})
    windows, keys = plan.windows, plan.keys
    current = set(keys)
    done = {k for k in plan.done if k.startswith("extract:")}
    stale = sorted((set(store.unit_sources(ns)) | done) - current)
    forget_cache_entries(store, ns, stale)
    report.dropped_units += store.drop_sources(ns, stale)
    positions = {w.key for w in windows}
    changed = {k[len("extract:"):].split("@")[0] for k in stale}
    for f in store.failures(ns):  # failure records (raw replies) of windows gone or changed
        kind, _, pos = f["key"].partition(":")
        if kind in ("extract", "reject") and (pos not in positions or pos in changed):
            store.clear_failure(ns, f["key"])
    st = PhaseStats()
    todo = [(w, k) for w, k in zip(windows, keys) if k not in done]
    st.resumed_windows = len(windows) - len(todo)
    if stale or todo:
        store.clear_done(ns, COMPLETE)
        store.clear_done(ns, TRACES_DONE)
    if progress and st.resumed_windows:
        progress(st.resumed_windows)
    key_of = {w.key: k for w, k in todo}
    committed: set[str] = set()
    t0, before = time.perf_counter(), usage_snapshot(llm)
    for res in ex.run([w for w, _ in todo], ns, speakers):
        remember_cache_keys(store, ns, llm, res.requests, key_of[res.window.key])
        if _commit_window(store, ns, res, key_of[res.window.key], st, report):
            committed.add(key_of[res.window.key])
        if progress:
            progress(1)
    st.seconds = time.perf_counter() - t0
    usage_delta(st, before, usage_snapshot(llm))
    by_source = store.unit_sources(ns)
    ordered = [uid for k in keys for uid in by_source.get(k, [])]
    if ordered != [uid for ids in by_source.values() for uid in ids]:
        store.reorder_units(ns, ordered)
    missing = len({k for _, k in todo} - committed)  # windows done before this build stay done
    if missing:
        report.incomplete[ns] = missing
    st.units = len(ordered)
    report.add(ns, "extraction", st)
    return [k for k in keys if k in by_source]


def _consolidate(conversation: Conversation, extractor: str | Extractor, ex: Extractor, llm: ChatBackend | None,
                 store: MemoryStore, cfg: BuildConfig, report: BuildReport, sources: list[str]
                 ) -> tuple[list[AtomicUnit], list[MemoryTrace]]:
    """Traces over the stored units (skipped when current); marks the namespace complete when no
    window is missing. Grouping reads unit fields only (construct/traces.py), so nothing is encoded."""
    ns = conversation.id
    units = store.units(ns)
    consolidation = _consolidation(cfg, extractor, ex)
    key = _traces_key(units, sources, cfg, consolidation)
    report.add(ns, "embedding", PhaseStats())
    if store.is_done(ns, key) and store.is_done(ns, TRACES_DONE):
        traces = store.traces(ns)
        report.add(ns, "consolidation", PhaseStats(traces=len(traces)))
        _mark_complete(store, ns, report)
        return units, traces
    cst = PhaseStats()
    t1, before = time.perf_counter(), usage_snapshot(llm)
    turn_texts, speakers = {t.id: t.text for t in conversation.turns()}, {t.id: t.speaker for t in conversation.turns()}
    llm_roles = consolidation == "llm" and units
    probe, off = build_readings(store, ns, turn_texts, cfg.traces.change_probe)
    report.warnings += [off] if off else []
    roles_fn = _llm_roles(units, llm, store, cfg, report, cst, turn_texts, speakers, probe) if llm_roles else None
    new_units, traces = build_traces(units, cfg.traces, roles_fn, turn_texts=turn_texts, turn_speakers=speakers,
                                     probe=probe)
    changed = [n for o, n in zip(units, new_units) if (o.trace_id, o.trace_role, o.superseded) !=
               (n.trace_id, n.trace_role, n.superseded)]  # only these units' stored records change
    store.put_traces(ns, traces, changed)
    store.clear_done(ns, "traces@")
    store.mark_done(ns, key)
    store.mark_done(ns, TRACES_DONE)
    _mark_complete(store, ns, report)
    cst.seconds = time.perf_counter() - t1
    usage_delta(cst, before, usage_snapshot(llm))
    cst.traces = len(traces)
    report.add(ns, "consolidation", cst)
    return new_units, traces


def _mark_complete(store: MemoryStore, ns: str, report: BuildReport) -> None:
    if ns not in report.incomplete:
        store.mark_done(ns, COMPLETE)


def _llm_roles(units: list[AtomicUnit], llm: ChatBackend | None, store: MemoryStore, cfg: BuildConfig,
               report: BuildReport, cst: PhaseStats, turn_texts: dict[str, str], speakers: dict[str, str],
               probe: ProbeReadings | None) -> Any:
    """Update/supplement roles decided by the LLM per trace group (the groups `build_traces` forms); rule roles where it
    failed."""
    if llm is None:
        raise ValueError("consolidation='llm' needs an LLM backend")
    from qgmem.construct.consolidate import LLMConsolidator

    ns = units[0].namespace
    groups = [g.members for g in group_traces(units, cfg.traces, turn_texts=turn_texts, turn_speakers=speakers,
                                              probe=probe)]
    outcome = LLMConsolidator(llm).decide([[units[i] for i in g] for g in groups])
    for gi, (err, raw) in outcome.failures.items():
        fkey = f"consolidate:{units[groups[gi][0]].id}"
        store.record_failure(ns, fkey, err + " (rule roles used instead)", raw)
        report.failures.append({"namespace": ns, "key": fkey, "error": err})
        cst.failed_traces += 1

    def roles_fn(ti: int, members: list[int]) -> Any:
        got = outcome.decided.get(ti)
        return None if got is None else (got[0], {members[p] for p in got[1]})

    return roles_fn


def _commit_window(store: MemoryStore, ns: str, res: WindowResult, key: str, st: PhaseStats,
                   report: BuildReport) -> bool:
    """Store a window's outcome: units + done marker (`key`) in one transaction, or a failure record
    (kept by window position, `extract:<session>#w<i>` / `reject:...`, until the window succeeds).
    True when the window is done."""
    st.windows += 1
    pos = res.window.key
    if res.error is not None:
        st.failed_windows += 1
        store.record_failure(ns, f"extract:{pos}", res.error, res.raw)
        report.failures.append({"namespace": ns, "key": f"extract:{pos}", "error": res.error})
        return False
    store.clear_failure(ns, f"reject:{pos}")
    if res.rejected:
        st.rejected_units += len(res.rejected)
        err, raw = rejected_summary(res.rejected)
        store.record_failure(ns, f"reject:{pos}", err, raw)
        report.failures.append({"namespace": ns, "key": f"reject:{pos}", "error": err})
    store.add_units(ns, res.units, done_key=key)
    store.clear_failure(ns, f"extract:{pos}")
    return True
