"""LoCoMo (``locomo10.json``): 10 conversations, 272 sessions, 5,882 turns, 1,986 questions.

Choices, all documented in ``../shared/data/locomo/README.md`` terms:

- Sessions come from the ``session_N`` keys; ``session_N_date_time`` keys without a session
  (conv-26 has ``session_20..35_date_time``) are ignored and counted in ``Conversation.meta``.
- Session id = the file's key (``session_3``); date = ISO of e.g. "1:56 pm on 8 May, 2023", with the
  original spelling in ``Session.date_text``.
- Question id = ``<sample_id>:q<index in the qa list>``; category = "1".."5" with the official meaning
  (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial).
- Category 5 has no answer: ``answers == []``; its ``adversarial_answer`` (a plausible wrong answer) is
  in ``meta``; the two category-5 items that also carry ``answer`` keep it as ``meta['answer_field']``;
  ``meta['abstention']`` is True exactly for category 5.
- Evidence is split on ``;``/commas/whitespace, ``D:11:26`` is read as ``D11:26``, zero padding is
  stripped when that names a turn, and what still names no turn goes to ``unmatched_evidence``.
- ``question_time``: LoCoMo gives none, so we use the date of the conversation's last session (the
  questions are asked after the whole dialogue). ``meta['question_time_source'] = 'last_session'``.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..paths import data_dir
from ..types import Conversation, Question, Session, Turn
from .dates import parse_locomo_date
from .errors import Ctx
from .evidence import match_locomo_evidence, sessions_of
from .jsonfile import read_json

FILE = "locomo/locomo10.json"
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DATE_KEY = re.compile(r"^session_(\d+)_date_time$")


def default_path(root: str | Path | None = None) -> Path:
    return Path(root or data_dir()) / FILE


def load_locomo(path: str | Path | None = None) -> list[Conversation]:
    """All LoCoMo conversations with their questions attached."""
    path = Path(path) if path else default_path()
    data = read_json(path)
    if not isinstance(data, list):
        raise Ctx(path).error(f"expected a list of samples, got {type(data).__name__}")
    return [_sample(path, i, s) for i, s in enumerate(data)]


def _sample(path: Path, index: int, sample: object) -> Conversation:
    ctx = Ctx(path, f"sample {index}")
    sid = ctx.field(sample, "sample_id", str)
    ctx = Ctx(path, f"sample {index} ({sid})")
    conv = ctx.field(sample, "conversation", dict)
    cctx = ctx.sub("conversation")
    speakers = [s for s in (conv.get("speaker_a"), conv.get("speaker_b")) if isinstance(s, str)]

    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.match(k)))
    dangling = sorted(int(m.group(1)) for k in conv if (m := _DATE_KEY.match(k)) and int(m.group(1)) not in numbers)
    sessions: list[Session] = []
    turn_to_session: dict[str, str] = {}
    for n in numbers:
        key = f"session_{n}"
        sctx = cctx.sub(key)
        raw_turns = sctx.field(conv, key, list)
        date_text = cctx.field(conv, f"{key}_date_time", str)
        date = parse_locomo_date(date_text)
        if date is None:
            raise cctx.error(f"field '{key}_date_time' has an unreadable date {date_text!r}")
        turns: list[Turn] = []
        for j, t in enumerate(raw_turns):
            tctx = sctx.sub(f"turn {j}")
            tid = tctx.field(t, "dia_id", str)
            if tid in turn_to_session:
                raise tctx.error(f"field 'dia_id' repeats {tid!r}")
            turn_to_session[tid] = key
            cap = t.get("blip_caption")
            turns.append(Turn(id=tid, speaker=tctx.field(t, "speaker", str), text=tctx.field(t, "text", str),
                              image_caption=cap if isinstance(cap, str) and cap else None))
        sessions.append(Session(id=key, date=date, turns=turns, date_text=date_text))

    last_date = sessions[-1].date if sessions else None
    questions = [_question(ctx.sub(f"qa {k}"), sid, k, qa, turn_to_session, last_date)
                 for k, qa in enumerate(ctx.field(sample, "qa", list))]
    meta = {"sample_id": sid}
    if dangling:
        meta["dangling_date_keys"] = [f"session_{n}_date_time" for n in dangling]
    return Conversation(id=sid, sessions=sessions, questions=questions, speakers=speakers, meta=meta)


def _question(ctx: Ctx, sid: str, k: int, qa: object, turn_to_session: dict[str, str],
              last_date: str | None) -> Question:
    text = ctx.field(qa, "question", str)
    cat = ctx.field(qa, "category", int)
    if not 1 <= cat <= 5:
        raise ctx.error(f"field 'category' should be 1..5, got {cat}")
    meta: dict[str, object] = {"question_time_source": "last_session", "abstention": cat == 5}
    if cat == 5:
        answers: list[str] = []
        adv = ctx.field(qa, "adversarial_answer", (str, int), optional=True)
        if adv is not None:
            meta["adversarial_answer"] = str(adv)
        if qa.get("answer") is not None:
            meta["answer_field"] = str(qa["answer"])
    else:
        answers = [str(ctx.field(qa, "answer", (str, int, float)))]
    raw_ev = ctx.field(qa, "evidence", list, optional=True, default=[])
    if not all(isinstance(e, str) for e in raw_ev):
        raise ctx.error("field 'evidence' should be a list of strings")
    matched, unmatched = match_locomo_evidence(raw_ev, turn_to_session)
    return Question(id=f"{sid}:q{k}", text=text, answers=answers, category=str(cat), evidence=matched,
                    evidence_sessions=sessions_of(matched, turn_to_session), question_time=last_date,
                    conversation_id=sid, unmatched_evidence=unmatched, meta=meta)
