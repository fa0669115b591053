"""The knowledge-update measurement over a fixture set (tests/fixtures/updates*/): one definition of each
figure, shared by the tests and by `bench/update_fixtures.py`, so the in-sample and held-out sets are
measured the same way.

A set is built with the real rule extractor into a store (`build_cases`), then read as:
- traced: a labelled update whose old and new turn have units in one trace, the new one an update and
  the old one superseded;
- subjects: a labelled first-person or pronoun turn with a unit whose subject is the label;
- now / when / before: questions with a superseded turn, asked of `QGMemRetriever` as configured
  (k = 20). "now" and "when": the turn of the latest state (for "when", the transition) ranks above
  the superseded one; "before": the earlier state's turn (its evidence) ranks above the latest one,
  since the past is the answer there. "now" is also measured with `state_order` off, to show what the
  reordering adds. (A top-10 test would say nothing here: a fixture chat makes about 8 units.)
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from pathlib import Path

from qgmem.construct.build import build_memory
from qgmem.retrieve.config import RetrievalConfig
from qgmem.retrieve.method import QGMemRetriever
from qgmem.store import MemoryStore
from qgmem.testing.update_fixtures import STATES, Update, UpdateCase, load_update_fixtures
from qgmem.types import AtomicUnit, MemoryTrace, Question

K = 20  # items asked of the retriever per question


@dataclass
class Rate:
    hits: int = 0
    total: int = 0

    def add(self, ok: bool) -> None:
        self.hits += bool(ok)
        self.total += 1

    @property
    def share(self) -> float:
        return self.hits / self.total if self.total else 0.0

    def __str__(self) -> str:
        return f"{self.hits}/{self.total} = {self.share:.1%}"


@dataclass
class Built:
    case: UpdateCase
    units: list[AtomicUnit]
    traces: list[MemoryTrace]

    def units_of_turn(self) -> dict[str, list[AtomicUnit]]:
        by: dict[str, list[AtomicUnit]] = collections.defaultdict(list)
        for u in self.units:
            for t in u.turn_ids:
                by[t].append(u)
        return by


@dataclass
class Miss:
    """A labelled update that formed no trace, with the units of its two turns (what the extractor made)."""

    conversation: str
    update: Update
    old: list[AtomicUnit]
    new: list[AtomicUnit]
    old_text: str
    new_text: str


@dataclass
class UpdateReport:
    name: str
    conversations: int
    traced: Rate
    traced_by_state: dict[str, Rate]
    subjects: Rate
    questions: dict[str, Rate]  # now, now_plain, when, before
    misses: list[Miss] = field(default_factory=list)
    units: int = 0
    traces: int = 0


def build_cases(cases: list[UpdateCase], store: MemoryStore) -> list[Built]:
    """Every conversation built by the rule extractor into `store`."""
    out = []
    for c in cases:
        units, traces = build_memory(c.conversation, "rule", store=store)
        out.append(Built(c, units, traces))
    return out


def _traced(by: dict[str, list[AtomicUnit]], up: Update) -> bool:
    return any(o.trace_id is not None and o.trace_id == n.trace_id and n.trace_role == "update" and o.superseded
               for o in by[up.old] for n in by[up.new])


def trace_rates(built: list[Built]) -> tuple[Rate, dict[str, Rate], list[Miss]]:
    """Labelled updates traced: overall, per state class, and the misses."""
    total, per_state, misses = Rate(), {s: Rate() for s in STATES}, []
    for b in built:
        by = b.units_of_turn()
        text = {t.id: t.text for t in b.case.conversation.turns()}
        for up in b.case.updates:
            ok = _traced(by, up)
            total.add(ok)
            per_state[up.state].add(ok)
            if not ok:
                misses.append(Miss(b.case.conversation.id, up, by[up.old], by[up.new], text[up.old], text[up.new]))
    return total, per_state, misses


def _norm(s: str) -> str:
    return " ".join(s.lower().replace("’", "'").split())


def subject_rate(built: list[Built]) -> Rate:
    """Labelled first-person and pronoun turns with a unit of the labelled subject."""
    rate = Rate()
    for b in built:
        by = b.units_of_turn()
        for tid, subj in b.case.subjects.items():
            rate.add(any(_norm(u.subject) == _norm(subj) for u in by[tid]))
    return rate


def _rank(items, turn: str | None) -> float:
    return next((i for i, it in enumerate(items) if turn in it.turn_ids), float("inf"))


def _question_ok(q: Question, items) -> bool:
    if q.meta["kind"] == "before":
        return min((_rank(items, e) for e in q.evidence), default=float("inf")) < _rank(items, q.meta["latest"])
    return _rank(items, q.meta["latest"]) < _rank(items, q.meta["superseded"])


def question_rates(store: MemoryStore, built: list[Built]) -> dict[str, Rate]:
    """now (reordered and plain), when and before, over the questions that have a superseded turn."""
    on, off = QGMemRetriever(store, RetrievalConfig()), QGMemRetriever(store, RetrievalConfig(state_order=False))
    rates = {k: Rate() for k in ("now", "now_plain", "when", "before")}
    for b in built:
        conv = b.case.conversation
        for r in (on, off):
            r.build(conv)
        for q in conv.questions:
            kind = q.meta["kind"]
            if q.meta["superseded"] is None:
                continue
            rates[kind].add(_question_ok(q, on.activate(q, k=K).items))
            if kind == "now":
                rates["now_plain"].add(_question_ok(q, off.activate(q, k=K).items))
        for r in (on, off):
            r.release(conv.id)
    return rates


def measure(name: str, path: str | Path, store_dir: str | Path) -> UpdateReport:
    """Load a fixture set, build it into a fresh store at `store_dir` and measure it."""
    cases = load_update_fixtures(path)
    store = MemoryStore(store_dir)
    try:
        built = build_cases(cases, store)
        traced, per_state, misses = trace_rates(built)
        return UpdateReport(name, len(cases), traced, per_state, subject_rate(built), question_rates(store, built),
                            misses, sum(len(b.units) for b in built), sum(len(b.traces) for b in built))
    finally:
        store.close()


def rows(r: UpdateReport) -> list[tuple[str, Rate]]:
    """(measure, rate) in the order the report prints them."""
    q = r.questions
    return [("updates traced", r.traced), *((f"  {s}", r.traced_by_state[s]) for s in STATES),
            ("subjects right", r.subjects), ('"now": latest above superseded', q["now"]),
            ("  same, without state_order", q["now_plain"]), ('"when": transition above superseded', q["when"]),
            ('"before": earlier state above latest', q["before"])]


def table(reports: list[UpdateReport]) -> str:
    """A Markdown table, one column per set, counts and percentages."""
    head = "| measure | " + " | ".join(f"{r.name} ({r.conversations} conversations)" for r in reports) + " |"
    lines = [head, "|---|" + "---|" * len(reports)]
    for i, (label, _) in enumerate(rows(reports[0])):
        lines.append(f"| {label} | " + " | ".join(str(rows(r)[i][1]) for r in reports) + " |")
    lines.append("| units / traces built | " + " | ".join(f"{r.units} / {r.traces}" for r in reports) + " |")
    return "\n".join(lines)


def _unit_line(u: AtomicUnit) -> str:
    trace = f"{u.trace_id[-6:]} {u.trace_role}{' superseded' if u.superseded else ''}" if u.trace_id else "no trace"
    return f"({u.subject} | {u.relation} | {u.object}) [{trace}]"


def misses_text(report: UpdateReport) -> str:
    """Each untraced update: its turns and the units the extractor made of them."""
    out = [f"{report.name}: {len(report.misses)} of {report.traced.total} labelled updates formed no trace"]
    for m in report.misses:
        out.append(f"- {m.conversation} {m.update.state}: {m.update.old} -> {m.update.new}")
        for tag, tid, text, units in (("old", m.update.old, m.old_text, m.old), ("new", m.update.new, m.new_text, m.new)):
            out.append(f"    {tag} {tid}: {text}")
            out += [f"        {_unit_line(u)}" for u in units] or ["        (no unit)"]
    return "\n".join(out)
