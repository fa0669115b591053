"""Ranking by the time a question asks about, over memory traces (QGMem §III-A2 at query time).

A question about the current state ("Where does Priya work now?") should see a trace's latest state
before the states it superseded; a question about a transition ("When did Priya quit ...?") should
see the update before the states it replaced; a question about the past ("... before moving to
Valencia?") keeps the ranking, since the superseded state is the answer. `question_tense` reads the
question's cues (qgmem/words/question_tense.txt); `reorder` moves rows of a ranking accordingly,
adding the latest state or the update when the ranking lacks it. A stale row is a superseded unit or
a unit without a trace said in the same turn as one (its source dialogue shows the stale state too).
Scores stay non-increasing: a moved row takes the score of the row it is placed above.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

import Stemmer

from qgmem.construct.traces import memory_time_key
from qgmem.types import AtomicUnit, MemoryTrace
from qgmem.words import load_rows

Tense = Literal["present", "transition", "past"]
_WORD_RE = re.compile(r"[a-z0-9']+")
_stemmer = Stemmer.Stemmer("english")


@lru_cache(maxsize=1)
def _cues() -> dict[str, frozenset[str]]:
    """role -> cues; transition verbs as stem phrases."""
    out: dict[str, set[str]] = {}
    for row in load_rows("question_tense"):
        if len(row) != 2:
            raise ValueError(f"question_tense: expected 'cue<TAB>role', got {row!r}")
        cue, role = row[0].lower(), row[1]
        out.setdefault(role, set()).add(" ".join(_stemmer.stemWords(cue.split())) if role == "transition" else cue)
    return {k: frozenset(v) for k, v in out.items()}


def _has(words: list[str], phrases: frozenset[str]) -> bool:
    text = f" {' '.join(words)} "
    return any(f" {p} " in text for p in phrases)


def question_tense(text: str) -> Tense | None:
    """"transition" for "when did ... quit/move/start ...", "past" for "before"/"used to"/"first",
    "present" for "now"/"still"/"these days" or a present-tense question ("Where does X work?"),
    None when the question does not say."""
    cues = _cues()
    words = _WORD_RE.findall(text.lower().replace("’", "'"))
    if not words:
        return None
    stems = _stemmer.stemWords(words)
    if _has(words, cues.get("when", frozenset())) and _has(stems, cues.get("transition", frozenset())):
        return "transition"
    if _has(words, cues.get("past", frozenset())):
        return "past"
    if _has(words, cues.get("present", frozenset())):
        return "present"
    present, other = cues.get("aux_present", frozenset()), cues.get("aux_other", frozenset())
    for w in words:  # the first auxiliary decides
        if w in present:
            return "present"
        if w in other:
            return None
    return None


def trace_rows(units: list[AtomicUnit], traces: list[MemoryTrace]) -> tuple[dict[int, int], dict[int, int]]:
    """Rows of stale states and what to show above them, rows being positions in `units`:
    (row -> row of its trace's latest state, row -> row of the update that followed it), for every
    superseded unit and for the trace-less units said in the same turn (their source dialogue shows
    the stale state too). Computed once per index; `reorder` reads them per question."""
    row_of = {u.id: i for i, u in enumerate(units)}
    latest: dict[int, int] = {}
    for tr in traces:
        last = row_of.get(tr.latest_unit_id)
        for x in tr.unit_ids:
            r = row_of.get(x)
            if last is not None and r is not None and r != last and units[r].superseded:
                latest[r] = last
    update = _update_rows(units)
    by_turn: dict[str, list[int]] = {}
    for r, u in enumerate(units):
        if u.trace_id is None:
            for t in u.turn_ids:
                by_turn.setdefault(t, []).append(r)
    for stale in sorted(set(latest) | set(update)):
        for t in units[stale].turn_ids:
            for mate in by_turn.get(t, []):
                if stale in latest:
                    latest.setdefault(mate, latest[stale])
                if stale in update:
                    update.setdefault(mate, update[stale])
    return latest, update


def reorder(rows: list[int], scores: list[float], units: list[AtomicUnit], trace_latest_row: dict[int, int],
            tense: Tense | None, trace_update_row: dict[int, int] | None = None) -> tuple[list[int], list[float]]:
    """The ranking with, for a present question, the latest state placed directly above each stale row
    (`trace_latest_row`, from `trace_rows`), and for a transition question the update that followed it
    (`trace_update_row`; derived from the units' trace fields when not given). A missing row is added."""
    if tense not in ("present", "transition") or not rows:
        return list(rows), list(scores)
    if tense == "present":
        helper = trace_latest_row
    else:
        helper = trace_update_row if trace_update_row is not None else _update_rows(units)
    out_rows: list[int] = []
    out_scores: list[float] = []
    placed: set[int] = set()
    for r, s in zip(rows, scores):
        if r in placed:
            continue  # already moved up above a state it replaced
        h = helper.get(r)
        if h is not None and h != r and h not in placed:
            out_rows.append(h)
            out_scores.append(s)
            placed.add(h)
        out_rows.append(r)
        out_scores.append(s)
        placed.add(r)
    return out_rows, out_scores


def _update_rows(units: list[AtomicUnit]) -> dict[int, int]:
    """Superseded row -> the first later update of its trace, from the units' trace fields."""
    members: dict[str, list[int]] = {}
    for r, u in enumerate(units):
        if u.trace_id is not None:
            members.setdefault(u.trace_id, []).append(r)
    out: dict[int, int] = {}
    for rows in members.values():
        rows.sort(key=lambda r: memory_time_key(units[r], r))
        for k, r in enumerate(rows):
            if units[r].superseded:
                nxt = next((x for x in rows[k + 1:] if units[x].trace_role == "update"), None)
                if nxt is not None:
                    out[r] = nxt
    return out
