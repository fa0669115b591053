"""LongMemEval (oracle: 500 questions; S cleaned: 498 here) -> one Conversation per question.

Each instance has its own haystack, so each becomes its own Conversation (id = question_id) with
one question. Choices:

- Sessions = the haystack sessions (date from ``haystack_dates``), put in chronological order
  (stable sort; S is already sorted, the oracle is not).
- Session ids are anonymised before anything sees them: the benchmark names gold sessions
  ``answer_<hex>``, a name that could leak into rankings (ties broken by id, ids hashed or indexed as
  text). Each session gets the opaque id ``s<position>`` (4 digits) by its place in the chronological
  order, which a method sees anyway through the dates, so the id says nothing the dialogue does not.
  ``Conversation.meta['original_session_ids']`` maps opaque -> benchmark id, and
  ``Question.meta['original_evidence']`` / ``['original_evidence_sessions']`` keep the benchmark's gold
  ids: for reports only, never indexed. The file's order is ``meta['haystack_order']`` (opaque ids).
- A session id repeated inside one haystack (S: 13 filler sessions, identical turns, other dates) gives
  two sessions; both map to the repeated benchmark id.
- Turn id = ``"<opaque session id>:<i>"`` with ``i`` the 0-based position in the session; speaker = role.
- ``Question.evidence`` = turns with ``has_answer: true``; ``evidence_sessions`` = ``answer_session_ids``
  (an answer session missing from the haystack would be listed in ``unmatched_evidence`` under its
  benchmark id; none is); ``category`` = ``question_type``; ``meta['abstention']`` = question id ends
  with ``_abs``.
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


def _sessions(ctx: Ctx, inst: object) -> list[tuple[str, Session, list[int]]]:
    """(benchmark id, session with provisional ids, indices of its has_answer turns) in file order."""
    sids = ctx.field(inst, "haystack_session_ids", list)
    dates = ctx.field(inst, "haystack_dates", list)
    raw_sessions = ctx.field(inst, "haystack_sessions", list)
    if not len(sids) == len(dates) == len(raw_sessions):
        raise ctx.error(f"fields 'haystack_session_ids', 'haystack_dates', 'haystack_sessions' differ in length "
                        f"({len(sids)}, {len(dates)}, {len(raw_sessions)})")
    out: list[tuple[str, Session, list[int]]] = []
    for k, (sid, dtext, turns) in enumerate(zip(sids, dates, raw_sessions)):
        sctx = ctx.sub(f"session {k} ({sid})")
        if not isinstance(sid, str):
            raise ctx.error(f"field 'haystack_session_ids' item {k} should be a string, got {sid!r}")
        if not isinstance(turns, list):
            raise sctx.error(f"field 'haystack_sessions' item {k} should be a list of turns")
        date = parse_longmemeval_date(dtext) if isinstance(dtext, str) else None
        if date is None:
            raise ctx.error(f"field 'haystack_dates' item {k} is not a date: {dtext!r}")
        made: list[Turn] = []
        gold: list[int] = []
        for j, t in enumerate(turns):
            tctx = sctx.sub(f"turn {j}")
            made.append(Turn(id=str(j), speaker=tctx.field(t, "role", str), text=tctx.field(t, "content", str)))
            if t.get("has_answer") is True:
                gold.append(j)
        out.append((sid, Session(id=str(k), date=date, turns=made, date_text=dtext), gold))
    return out


def _anonymise(raw: list[tuple[str, Session, list[int]]]) -> tuple[list[Session], dict[str, str], list[str]]:
    """Sessions in chronological order under opaque ids ``s0000``.. (by that order, never by benchmark id);
    (sessions, opaque -> benchmark id, opaque ids in file order). Turn ids become ``<opaque>:<i>``."""
    order = sorted(range(len(raw)), key=lambda k: raw[k][1].date or "")  # stable: ties keep file order
    width = max(4, len(str(len(raw) - 1)))
    new_id = {k: f"s{pos:0{width}d}" for pos, k in enumerate(order)}
    sessions: list[Session] = []
    for k in order:
        s = raw[k][1]
        s.id = new_id[k]
        for j, t in enumerate(s.turns):
            t.id = f"{s.id}:{j}"
        sessions.append(s)
    original = {new_id[k]: raw[k][0] for k in order}
    return sessions, original, [new_id[k] for k in range(len(raw))]


def _instance(path: Path, i: int, inst: object) -> Conversation:
    ctx = Ctx(path, f"instance {i}")
    qid = ctx.field(inst, "question_id", str)
    ctx = Ctx(path, f"instance {i} ({qid})")
    raw = _sessions(ctx, inst)
    evidence_at = [(k, j) for k, (_, _, gold) in enumerate(raw) for j in gold]  # file order, as the benchmark
    original_evidence = [f"{raw[k][0]}:{j}" for k, j in evidence_at]
    sessions, original, file_order = _anonymise(raw)
    evidence = [raw[k][1].turns[j].id for k, j in evidence_at]
    first_of: dict[str, str] = {}  # benchmark id -> opaque id of its first copy in the file
    for new in file_order:
        first_of.setdefault(original[new], new)

    answer = ctx.field(inst, "answer", (str, int, float))
    ev_sessions = [str(s) for s in ctx.field(inst, "answer_session_ids", list)]
    qdate_text = ctx.field(inst, "question_date", str)
    qtime = parse_longmemeval_date(qdate_text)
    if qtime is None:
        raise ctx.error(f"field 'question_date' is not a date: {qdate_text!r}")
    q = Question(id=qid, text=ctx.field(inst, "question", str), answers=[str(answer)],
                 category=ctx.field(inst, "question_type", str), evidence=evidence,
                 evidence_sessions=[first_of[s] for s in ev_sessions if s in first_of], question_time=qtime,
                 conversation_id=qid, unmatched_evidence=[s for s in ev_sessions if s not in first_of],
                 meta={"abstention": qid.endswith("_abs"), "question_date": qdate_text,
                       "original_evidence": original_evidence,
                       "original_evidence_sessions": [s for s in ev_sessions if s in first_of]})
    meta: dict[str, object] = {"haystack_order": file_order, "original_session_ids": original}
    return Conversation(id=qid, sessions=sessions, questions=[q], speakers=["user", "assistant"], meta=meta)


__all__ = ["load_longmemeval", "iter_longmemeval", "default_path", "DataError"]
