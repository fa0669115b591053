"""BEAM ("Beyond a Million Tokens"): 128K (20 chats, 400 q) and 500K (35 chats, 700 q).

Layout (GitHub ``mohammadtavakoli78/BEAM``; the repo calls the 128K scale ``100K``):
128K chats in ``beam/chats/100K/<n>/chat.json``; 500K chats all in ``beam/beam_500K_chats.json.xz``
(``{"1": chat, ...}``, our packed copy) or, as downloaded from GitHub, in ``beam/chats/500K/<n>/chat.json``;
questions in ``beam/chats/<scale>/<n>/probing_questions.json``.

Choices:
- Conversation id = ``beam-<scale>-<n>``; each batch becomes a session ``batch_<batch_number>``, dated
  by the batch's ``time_anchor`` or else the first message ``time_anchor`` in it (``March-15-2024`` ->
  ``2024-03-15``), else None. These anchors are dates named in the plan, not timestamps, and most
  batches have none.
- Turn id = ``str(message id)``; speaker = role; the generation marker ``" ->-> 1,1"`` (also
  ``2,N/A`` or ``9,5) <leaked plan label>``; always on the last line) that ends most user messages,
  and a few assistant messages, is stripped.
- One Question per probing question: id ``<conv id>:<ability>:<i>``, category = ability, answer from
  the ability's gold field (`GOLD_FIELD`), evidence = ``source_chat_ids`` flattened (list, or dict of
  lists) and matched against message ids; ids that name no message go to ``unmatched_evidence``.
  ``meta`` keeps the rubric and every other field of the question; ``meta['abstention']`` marks the
  abstention ability. ``question_time`` is None (BEAM has no question dates).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from ..paths import data_dir
from ..types import Conversation, Question, Session, Turn
from .dates import parse_beam_date
from .errors import Ctx, DataError
from .evidence import flatten_ids, match_ids, sessions_of
from .jsonfile import read_json

Scale = Literal["128K", "500K"]
SCALE_DIRS = {"128K": "100K", "500K": "500K"}
CHATS_500K = "beam_500K_chats.json.xz"
GOLD_FIELD: dict[str, str] = {
    "abstention": "ideal_response",
    "contradiction_resolution": "ideal_answer",
    "event_ordering": "answer",
    "information_extraction": "answer",
    "instruction_following": "expected_compliance",
    "knowledge_update": "answer",
    "multi_session_reasoning": "answer",
    "preference_following": "expected_compliance",
    "summarization": "ideal_summary",
    "temporal_reasoning": "answer",
}
_MARKER = re.compile(r"\s*->->[^\n]*\Z")  # '->-> 1,1', '->-> 2,N/A', '->-> 9,5) <plan label text>'


def default_path(root: str | Path | None = None) -> Path:
    return Path(root or data_dir()) / "beam"


def strip_marker(text: str) -> str:
    """Drop the plan marker (' ->-> 2,3', sometimes followed by leaked plan text) ending a message."""
    return _MARKER.sub("", text)


def load_beam(scale: Scale = "128K", path: str | Path | None = None) -> list[Conversation]:
    """All chats of a BEAM scale with their probing questions. ``path`` = the ``beam`` folder."""
    scale = scale.upper()  # type: ignore[assignment]
    if scale not in SCALE_DIRS:
        raise ValueError(f"unknown BEAM scale {scale!r}; choose '128K' or '500K'")
    root = Path(path) if path else default_path()
    qdir = root / "chats" / SCALE_DIRS[scale]
    if not qdir.is_dir():
        raise DataError(qdir, "", f"folder not found: {qdir}")
    numbers = sorted((int(p.name) for p in qdir.iterdir() if p.is_dir() and p.name.isdigit()))
    if not numbers:
        raise DataError(qdir, "", f"no numbered chat folders in {qdir}")
    packed: dict[str, Any] | None = None
    packed_path = root / CHATS_500K
    if scale == "500K" and (packed_path.exists() or not (qdir / str(numbers[0]) / "chat.json").exists()):
        packed = read_json(packed_path)
        if not isinstance(packed, dict):
            raise DataError(packed_path, "", "expected an object {chat number: chat}")
    convs = []
    for n in numbers:
        if packed is not None:
            if str(n) not in packed:
                raise DataError(packed_path, "", f"chat {n} missing (its questions are in {qdir / str(n)})")
            chat, chat_file = packed[str(n)], packed_path
            cctx = Ctx(packed_path, f"chat {n}")
        else:
            chat_file = qdir / str(n) / "chat.json"
            chat = read_json(chat_file)
            cctx = Ctx(chat_file)
        qfile = qdir / str(n) / "probing_questions.json"
        convs.append(_chat(f"beam-{scale}-{n}", cctx, chat, qfile, scale))
    return convs


def _chat(cid: str, ctx: Ctx, chat: Any, qfile: Path, scale: str) -> Conversation:
    if not isinstance(chat, list):
        raise ctx.error(f"expected a list of batches, got {type(chat).__name__}")
    sessions: list[Session] = []
    turn_to_session: dict[str, str] = {}
    stripped = 0
    for b, batch in enumerate(chat):
        bctx = ctx.sub(f"batch {b}")
        bn = bctx.field(batch, "batch_number", (int, str), optional=True, default=b + 1)
        sid = f"batch_{bn}"
        anchor = batch.get("time_anchor") if isinstance(batch.get("time_anchor"), str) else None
        turns: list[Turn] = []
        for g, group in enumerate(bctx.field(batch, "turns", list)):
            msgs = group if isinstance(group, list) else [group]
            for m_i, msg in enumerate(msgs):
                mctx = bctx.sub(f"turn {g}, message {m_i}")
                mid = str(mctx.field(msg, "id", (int, str)))
                if mid in turn_to_session:
                    raise mctx.error(f"field 'id' repeats {mid}")
                role = mctx.field(msg, "role", str)
                text = mctx.field(msg, "content", str)
                clean = strip_marker(text)
                stripped += clean != text
                text = clean
                if anchor is None and isinstance(msg.get("time_anchor"), str):
                    anchor = msg["time_anchor"]
                turn_to_session[mid] = sid
                turns.append(Turn(id=mid, speaker=role, text=text))
        sessions.append(Session(id=sid, date=parse_beam_date(anchor) if anchor else None, turns=turns,
                                date_text=anchor))
    questions = _questions(cid, qfile, turn_to_session)
    return Conversation(id=cid, sessions=sessions, questions=questions, speakers=["user", "assistant"],
                        meta={"scale": scale, "markers_stripped": stripped})


def _questions(cid: str, qfile: Path, turn_to_session: dict[str, str]) -> list[Question]:
    data = read_json(qfile)
    qctx = Ctx(qfile)
    if not isinstance(data, dict):
        raise qctx.error(f"expected an object {{ability: [questions]}}, got {type(data).__name__}")
    out: list[Question] = []
    for ability, items in data.items():
        actx = qctx.sub(ability)
        if ability not in GOLD_FIELD:
            raise actx.error(f"unknown ability {ability!r} (known: {', '.join(GOLD_FIELD)})")
        if not isinstance(items, list):
            raise actx.error("expected a list of questions")
        for i, item in enumerate(items):
            ictx = actx.sub(f"question {i}")
            text = ictx.field(item, "question", str)
            gold = ictx.field(item, GOLD_FIELD[ability], (str, int, float, list))
            answers = [str(g) for g in gold] if isinstance(gold, list) else [str(gold)]
            raw = item.get("source_chat_ids")
            if raw is not None and not isinstance(raw, (list, dict)):
                raise ictx.error(f"field 'source_chat_ids' should be a list or an object, got {type(raw).__name__}")
            matched, unmatched = match_ids(flatten_ids(raw), turn_to_session)
            meta = {k: v for k, v in item.items() if k not in ("question", GOLD_FIELD[ability])}
            meta["abstention"] = ability == "abstention"
            meta["gold_field"] = GOLD_FIELD[ability]
            out.append(Question(id=f"{cid}:{ability}:{i}", text=text, answers=answers, category=ability,
                                evidence=matched, evidence_sessions=sessions_of(matched, turn_to_session),
                                question_time=None, conversation_id=cid, unmatched_evidence=unmatched,
                                meta=meta))
    return out
