"""MSC (Multi-Session Chat, ParlAI ``msc_v0.1``) dialogue episodes -> Conversations without questions.

MSC has no QA; it serves as multi-session filler and as dialogue for extraction experiments.
``msc_dialogue/session_N/{test,valid}.txt`` is JSON Lines; each episode holds session N (``dialog``)
and the N-1 earlier sessions (``previous_dialogs``, oldest first).

Choices: Conversation id = ``msc-s<N>-<split>:<initial_data_id>``; sessions ``S1..SN``; turn id
``S<k>:<i>``. Earlier sessions carry text only, so their speakers are assigned alternately starting
with "Speaker 1" (the current session, which names speakers, starts with Speaker 1 in this data;
an assumption for the earlier ones). A current-session speaker given as a worker number
(``"50997"``, on some first turns) is replaced by the alternation too.
MSC gives only relative times ("5 days 1 hour ago"): ``Session.date`` is None and ``date_text`` keeps
the relative time. Personas go to ``meta``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from ..paths import data_dir
from ..types import Conversation, Session, Turn
from .errors import Ctx
from .jsonfile import iter_jsonl

SPEAKERS = ("Speaker 1", "Speaker 2")


def default_path(session: int = 3, split: str = "test", root: str | Path | None = None) -> Path:
    return Path(root or data_dir()) / "msc" / "msc_dialogue" / f"session_{session}" / f"{split}.txt"


def load_msc(session: int = 3, split: Literal["test", "valid"] = "test", path: str | Path | None = None,
             limit: int | None = None) -> list[Conversation]:
    """Episodes of ``msc_dialogue/session_<session>/<split>.txt`` (each with all earlier sessions)."""
    path = Path(path) if path else default_path(session, split)
    out: list[Conversation] = []
    if limit is not None and limit <= 0:
        return out
    for where, ep in iter_jsonl(path):  # stops at `limit`: the lines after it are never read
        out.append(_episode(Ctx(path, where), ep, session, split))
        if limit is not None and len(out) >= limit:
            break
    return out


def _episode(ctx: Ctx, ep: Any, session: int, split: str) -> Conversation:
    meta = ctx.field(ep, "metadata", dict)
    did = ctx.sub("metadata").field(meta, "initial_data_id", str)
    cid = f"msc-s{session}-{split}:{did}"
    sessions: list[Session] = []
    for k, prev in enumerate(ctx.field(ep, "previous_dialogs", list), start=1):
        pctx = ctx.sub(f"previous_dialogs {k - 1}")
        turns = [Turn(id=f"S{k}:{i}", speaker=SPEAKERS[i % 2], text=pctx.sub(f"dialog {i}").field(u, "text", str))
                 for i, u in enumerate(pctx.field(prev, "dialog", list))]
        sessions.append(Session(id=f"S{k}", date=None, turns=turns, date_text=prev.get("time_back")))
    k = len(sessions) + 1
    turns = []
    renamed = 0
    for i, u in enumerate(ctx.field(ep, "dialog", list)):
        uctx = ctx.sub(f"dialog {i}")
        speaker = uctx.field(u, "id", str)
        if speaker not in SPEAKERS:  # a few first turns carry a worker number instead of the speaker name
            speaker, renamed = SPEAKERS[i % 2], renamed + 1
        turns.append(Turn(id=f"S{k}:{i}", speaker=speaker, text=uctx.field(u, "text", str)))
    sessions.append(Session(id=f"S{k}", date=None, turns=turns))
    return Conversation(id=cid, sessions=sessions, questions=[], speakers=list(SPEAKERS),
                        meta={"personas": ep.get("personas"), "init_personas": ep.get("init_personas"),
                              "initial_data_id": did, "speakers_renamed": renamed})
