"""MSC persona recall: the four ``msc_personasummary`` sessions of each speaker pair as one conversation,
with each annotated persona fact as a query whose evidence is the utterance that revealed it.

MSC has no QA, but its crowd workers wrote, per utterance, the persona fact it reveals
(``persona_text``, e.g. "I have two dogs." for "My two dogs keep me busy"). That makes a retrieval
task over human-human multi-session chat: find the turn a fact was said in. The reranker trains on
it (`configs/rerank/`); it is never a benchmark here. The queries are statements, not questions.

Choices: conversation id ``msc-persona-<split>:<initial_data_id>``; sessions ``S1..S4``; turn id
``S<k>:<i>``; speakers "Speaker 1" (``bot_0``) and "Speaker 2" (``bot_1``); no dates (MSC has none
for these files). Facts shorter than `min_words` words are skipped; a fact revealed by several turns of
one conversation is one query with all of them as evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..types import Conversation, Question, Session, Turn
from .errors import Ctx
from .jsonfile import iter_jsonl

SPEAKER_OF = {"bot_0": "Speaker 1", "bot_1": "Speaker 2"}
SESSIONS = (1, 2, 3, 4)


def _read(path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for where, ep in iter_jsonl(path, label=path.parent.name):  # every session's file has the same name
        ctx = Ctx(path, where)
        out[ctx.field(ep, "initial_data_id", str)] = (ctx, ep)
    return out


def load_msc_persona(root: Path, split: str = "valid", limit: int | None = None,
                     min_words: int = 4) -> list[Conversation]:
    """Conversations of ``<root>/msc/msc_personasummary/session_{1..4}/<split>.txt``, one per speaker pair
    present in all four sessions, in the order of session 1."""
    files = [_read(root / "msc" / "msc_personasummary" / f"session_{k}" / f"{split}.txt") for k in SESSIONS]
    out: list[Conversation] = []
    for did in files[0]:
        if limit is not None and len(out) >= limit:
            break
        if not all(did in f for f in files):
            continue
        sessions: list[Session] = []
        facts: dict[str, list[str]] = {}
        for k, f in zip(SESSIONS, files):
            ctx, ep = f[did]
            turns = []
            for i, u in enumerate(ctx.field(ep, "dialog", list)):
                uctx = ctx.sub(f"dialog {i}")
                tid = f"S{k}:{i}"
                speaker = SPEAKER_OF.get(str(u.get("id")), ("Speaker 1", "Speaker 2")[i % 2])
                turns.append(Turn(id=tid, speaker=speaker, text=uctx.field(u, "text", str)))
                fact = " ".join(str(u.get("persona_text") or "").split())
                if len(fact.split()) >= min_words:
                    facts.setdefault(fact, []).append(tid)
            sessions.append(Session(id=f"S{k}", date=None, turns=turns, date_text=f"session {k}"))
        cid = f"msc-persona-{split}:{did}"
        qs = [Question(id=f"f{j}", text=fact, answers=[fact], category="persona", evidence=tids, conversation_id=cid)
              for j, (fact, tids) in enumerate(facts.items())]
        out.append(Conversation(id=cid, sessions=sessions, questions=qs, speakers=["Speaker 1", "Speaker 2"],
                                meta={"initial_data_id": did}))
    return out
