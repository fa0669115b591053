"""Texts built from units: the index document, the reranker's structured candidate document, and the
trajectory lines of a unit's trace. Superseded states are marked, never hidden."""

from __future__ import annotations

from qgmem.types import AtomicUnit, Conversation, MemoryTrace, Turn


class UnitTexts:
    """Renders units of one conversation; knows turns (for source spans) and traces (for trajectories)."""

    def __init__(self, conversation: Conversation | None, units: list[AtomicUnit], traces: list[MemoryTrace]):
        self.turns: dict[str, Turn] = {}
        self.session_of: dict[str, tuple[list[Turn], int, str | None]] = {}
        if conversation is not None:
            for s in conversation.sessions:
                for i, t in enumerate(s.turns):
                    self.turns[t.id] = t
                    self.session_of[t.id] = (s.turns, i, s.date_text or s.date)
        self.units = {u.id: u for u in units}
        self.trace_of = {uid: tr for tr in traces for uid in tr.unit_ids}

    def source(self, u: AtomicUnit) -> str:
        """The unit's source dialogue span, one rendered turn per line (falls back to the claim)."""
        lines = [self.turns[t].render() for t in u.turn_ids if t in self.turns]
        return "\n".join(lines)

    def context(self, u: AtomicUnit, n: int, max_chars: int = 0) -> str:
        """`n` neighbouring turns on each side of the span, within its session, each cut to its first
        `max_chars` characters (0: whole): a short chat turn is context, a long message is a document of
        its own whose bulk would drown the unit's words."""
        if n <= 0 or not u.turn_ids or u.first_turn not in self.session_of or u.last_turn not in self.session_of:
            return ""
        turns, i0, _ = self.session_of[u.first_turn]
        _, i1, _ = self.session_of[u.last_turn]
        before = turns[max(0, i0 - n):i0]
        after = turns[i1 + 1:i1 + 1 + n]
        lines = [t.render() for t in [*before, *after]]
        return "\n".join(x[:max_chars] if max_chars else x for x in lines)

    def whole_turn(self, u: AtomicUnit) -> Turn | None:
        """The unit's turn when the unit's claim is that whole turn (a long message kept as one unit)."""
        t = self.turns.get(u.first_turn) if len(u.turn_ids) == 1 else None
        return t if t is not None and " ".join(u.text.split()) == " ".join(t.render().split()) else None

    def date(self, u: AtomicUnit) -> str:
        if u.first_turn in self.session_of and self.session_of[u.first_turn][2]:
            return str(self.session_of[u.first_turn][2])
        return u.utterance_time or ""

    def index_text(self, u: AtomicUnit, with_source: bool, context_turns: int, context_chars: int = 0) -> str:
        """What the lexical and dense channels index: claim, speaker, date, source and neighbours."""
        parts = [f"{u.speaker}: {u.text}" if u.speaker and not u.text.startswith(u.speaker) else u.text]
        if u.location:
            parts.append(f"at {u.location}")
        d = self.date(u)
        if d:
            parts.append(f"({d})")
        if with_source:
            src = self.source(u)
            if src and src != u.text:
                parts.append(src)
            ctx = self.context(u, context_turns, context_chars)
            if ctx:
                parts.append(ctx)
        return "\n".join(parts)

    def trajectory(self, u: AtomicUnit, max_states: int = 4) -> list[str]:
        """States of the unit's trace in memory order, each tagged with its role and status: the unit, its
        neighbours in the trace and the latest state (at most `max_states`, so long traces stay compact)."""
        tr = self.trace_of.get(u.id)
        if tr is None or len(tr.unit_ids) < 2:
            return []
        pos = tr.unit_ids.index(u.id) if u.id in tr.unit_ids else 0
        keep = {pos, tr.unit_ids.index(tr.latest_unit_id) if tr.latest_unit_id in tr.unit_ids else len(tr.unit_ids) - 1}
        for d in (-1, 1, -2, 2, -3, 3):
            if len(keep) >= max_states:
                break
            if 0 <= pos + d < len(tr.unit_ids):
                keep.add(pos + d)
        out = []
        for i in sorted(keep):
            uid, role = tr.unit_ids[i], tr.roles[i]
            v = self.units.get(uid)
            if v is None:
                continue
            status = "current" if uid == tr.latest_unit_id else ("superseded" if v.superseded else "earlier")
            when = v.utterance_time or ""
            me = " (this memory)" if uid == u.id else ""
            out.append(f"[{role}, {status}{', ' + when if when else ''}] {v.text}{me}")
        return out

    def candidate_document(self, u: AtomicUnit, with_trajectory: bool = True) -> str:
        """The reranker's structured document: fact summary, source dialogue, attributes, trajectory."""
        lines = [f"Fact: {u.text}"]
        if u.superseded:
            tr = self.trace_of.get(u.id)
            latest = self.units.get(tr.latest_unit_id) if tr else None
            lines.append("Status: superseded by a later update" + (f": {latest.text}" if latest else ""))
        src = self.source(u)
        if src:
            lines.append("Source dialogue:\n" + src)
        attrs = [f"speaker={u.speaker}"]
        if u.entities:
            attrs.append("entities=" + ", ".join(u.entities))
        if u.location:
            attrs.append(f"location={u.location}")
        if u.fact_time_start:
            attrs.append(f"time={u.fact_time_start}" + (f"..{u.fact_time_end}" if u.fact_time_end and u.fact_time_end != u.fact_time_start else ""))
        d = self.date(u)
        if d:
            attrs.append(f"said on {d}")
        lines.append("Attributes: " + "; ".join(attrs))
        if with_trajectory:
            traj = self.trajectory(u)
            if traj:
                lines.append("Trajectory:\n" + "\n".join(traj))
        return "\n".join(lines)
