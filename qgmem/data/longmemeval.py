"""LongMemEval (oracle: 500 questions; S cleaned: 498 here) -> one Conversation per question.

Each instance has its own haystack, so each becomes its own Conversation (id = question_id) with
one question. Choices:

- Sessions = the haystack sessions (id = haystack session id, date from ``haystack_dates``), put in
  chronological order (stable sort; S is already sorted, the oracle is not). The file's order is kept
  in ``Conversation.meta['haystack_order']``.
- A session id repeated inside one haystack (S: 13 filler sessions, identical turns, other dates) is
  kept under ``<id>#2``; ``meta['renamed_duplicate_sessions']`` maps new -> original id.
- Turn id = ``"<session_id>:<i>"`` with ``i`` the 0-based position in the session; speaker = role.
- ``Question.evidence`` = turns with ``has_answer: true``; ``evidence_sessions`` = ``answer_session_ids``
  (an answer session missing from the haystack would be listed in ``unmatched_evidence``; none is);
  ``category`` = ``question_type``; ``meta['abstention']`` = question id ends with ``_abs``.
- ``question_time`` = ISO of ``question_date``.

The S file unpacks to 257 MB, so instances are decoded one at a time from the (xz) stream
(`jsonfile.iter_json_array`) and turned into dataclasses right away; the raw dicts of one instance
are dropped before the next is read. ``limit`` stops after that many instances.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Literal

from tqdm import tqdm

from ..paths import data_dir
from ..types import Conversation, Question, Session, Turn
from .dates import parse_longmemeval_date
from .errors import Ctx, DataError
from .jsonfile import iter_json_array

Variant = Literal["oracle", "s"]
FILES: dict[str, tuple[str, ...]] = {
    # first existing name wins; the official names come after the names of the copies in shared/data
    "oracle": ("longmemeval/longmemeval_oracle.json", "longmemeval/longmemeval_oracle.json.xz"),
    "s": ("longmemeval/longmemeval_s_cleaned.498.json.xz", "longmemeval/longmemeval_s_cleaned.json",
          "longmemeval/longmemeval_s_cleaned.json.xz"),
}


def default_path(variant: Variant = "oracle", root: str | Path | None = None) -> Path:
    """The first of the known file names that exists under the data root (else the first name)."""
    if variant not in FILES:
        raise ValueError(f"unknown LongMemEval variant {variant!r}; choose 'oracle' or 's'")
    root = Path(root or data_dir())
    for rel in FILES[variant]:
        if (root / rel).exists():
            return root / rel
    return root / FILES[variant][0]


def iter_longmemeval(variant: Variant = "oracle", path: str | Path | None = None,
                     limit: int | None = None, progress: bool = False) -> Iterator[Conversation]:
    """Conversations one by one, decoding the file as a stream."""
    path = Path(path) if path else default_path(variant)
    it = iter_json_array(path)
    bar = tqdm(it, desc=f"longmemeval-{variant}", unit="q", disable=not progress)
    for i, inst in enumerate(bar):
        if limit is not None and i >= limit:
            break
        yield _instance(path, i, inst)


def load_longmemeval(variant: Variant = "oracle", path: str | Path | None = None,
                     limit: int | None = None, progress: bool = False) -> list[Conversation]:
    """All instances of a LongMemEval variant as Conversations (one question each)."""
    return list(iter_longmemeval(variant, path, limit=limit, progress=progress))


def _instance(path: Path, i: int, inst: object) -> Conversation:
    ctx = Ctx(path, f"instance {i}")
    qid = ctx.field(inst, "question_id", str)
    ctx = Ctx(path, f"instance {i} ({qid})")
    sids = ctx.field(inst, "haystack_session_ids", list)
    dates = ctx.field(inst, "haystack_dates", list)
    raw_sessions = ctx.field(inst, "haystack_sessions", list)
    if not len(sids) == len(dates) == len(raw_sessions):
        raise ctx.error(f"fields 'haystack_session_ids', 'haystack_dates', 'haystack_sessions' differ in length "
                        f"({len(sids)}, {len(dates)}, {len(raw_sessions)})")
    sessions: list[Session] = []
    evidence: list[str] = []
    seen: set[str] = set()
    renamed: dict[str, str] = {}
    for k, (sid, dtext, turns) in enumerate(zip(sids, dates, raw_sessions)):
        sctx = ctx.sub(f"session {k} ({sid})")
        if not isinstance(sid, str):
            raise ctx.error(f"field 'haystack_session_ids' item {k} should be a string, got {sid!r}")
        if sid in seen:
            # S repeats a few filler sessions (13 ids, same turns, other dates): keep both, renamed
            n = 2
            while f"{sid}#{n}" in seen:
                n += 1
            renamed[f"{sid}#{n}"] = sid
            sid = f"{sid}#{n}"
        seen.add(sid)
        if not isinstance(turns, list):
            raise sctx.error(f"field 'haystack_sessions' item {k} should be a list of turns")
        date = parse_longmemeval_date(dtext) if isinstance(dtext, str) else None
        if date is None:
            raise ctx.error(f"field 'haystack_dates' item {k} is not a date: {dtext!r}")
        out: list[Turn] = []
        for j, t in enumerate(turns):
            tctx = sctx.sub(f"turn {j}")
            tid = f"{sid}:{j}"
            out.append(Turn(id=tid, speaker=tctx.field(t, "role", str), text=tctx.field(t, "content", str)))
            if t.get("has_answer") is True:
                evidence.append(tid)
        sessions.append(Session(id=sid, date=date, turns=out, date_text=dtext))
    order = [s.id for s in sessions]
    sessions.sort(key=lambda s: s.date or "")

    answer = ctx.field(inst, "answer", (str, int, float))
    ev_sessions = ctx.field(inst, "answer_session_ids", list)
    missing = [s for s in ev_sessions if s not in seen]
    qdate_text = ctx.field(inst, "question_date", str)
    qtime = parse_longmemeval_date(qdate_text)
    if qtime is None:
        raise ctx.error(f"field 'question_date' is not a date: {qdate_text!r}")
    q = Question(id=qid, text=ctx.field(inst, "question", str), answers=[str(answer)],
                 category=ctx.field(inst, "question_type", str), evidence=evidence,
                 evidence_sessions=[str(s) for s in ev_sessions if s in seen], question_time=qtime,
                 conversation_id=qid, unmatched_evidence=[str(s) for s in missing],
                 meta={"abstention": qid.endswith("_abs"), "question_date": qdate_text})
    meta: dict[str, object] = {"haystack_order": order}
    if renamed:
        meta["renamed_duplicate_sessions"] = renamed
    return Conversation(id=qid, sessions=sessions, questions=[q], speakers=["user", "assistant"], meta=meta)


__all__ = ["load_longmemeval", "iter_longmemeval", "default_path", "DataError"]
