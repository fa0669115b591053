"""Gold-evidence normalisation shared by the loaders: messy id lists in, (matched, unmatched) out.

Gold ids are retrieval labels, so an id that names no turn must not vanish silently: it is kept in
``Question.unmatched_evidence`` and counted by `qgmem data stats`.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

_SPLIT = re.compile(r"[;,\s]+")
_LOCOMO_COLON = re.compile(r"^D:(\d+):(\d+)$")  # 'D:11:26' -> 'D11:26'
_LOCOMO_ID = re.compile(r"^D(\d+):(\d+)$")


def split_locomo_evidence(raw: Iterable[str]) -> list[str]:
    """Split joined entries ('D8:6; D9:17', 'D9:1 D4:4') and repair 'D:11:26'-style ids."""
    out: list[str] = []
    for entry in raw:
        for tok in _SPLIT.split(str(entry)):
            if not tok:
                continue
            m = _LOCOMO_COLON.match(tok)
            out.append(f"D{m.group(1)}:{m.group(2)}" if m else tok)
    return out


def match_locomo_evidence(raw: Iterable[str], turn_ids: set[str] | dict[str, Any]) -> tuple[list[str], list[str]]:
    """Normalise LoCoMo evidence and split it into ids that name a turn and ids that do not.

    Zero padding ('D30:05') is stripped only when the stripped id names a turn, so a real id is never
    rewritten into a different one.
    """
    matched: dict[str, None] = {}
    unmatched: dict[str, None] = {}
    for tok in split_locomo_evidence(raw):
        if tok in turn_ids:
            matched.setdefault(tok, None)
            continue
        m = _LOCOMO_ID.match(tok)
        if m:
            unpadded = f"D{int(m.group(1))}:{int(m.group(2))}"
            if unpadded in turn_ids:
                matched.setdefault(unpadded, None)
                continue
        unmatched.setdefault(tok, None)
    return list(matched), list(unmatched)


def flatten_ids(value: Any) -> list[Any]:
    """Leaves of nested lists / dicts of lists (BEAM `source_chat_ids`), in order; None leaves dropped."""
    out: list[Any] = []

    def walk(v: Any) -> None:
        if v is None:
            return
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        else:
            out.append(v)

    walk(value)
    return out


def match_ids(raw: Iterable[Any], turn_ids: set[str] | dict[str, Any]) -> tuple[list[str], list[str]]:
    """Stringify ids (ints -> '12') and split them into matched / unmatched, order kept, deduplicated."""
    matched: dict[str, None] = {}
    unmatched: dict[str, None] = {}
    for v in raw:
        s = str(v).strip()
        (matched if s in turn_ids else unmatched).setdefault(s, None)
    return list(matched), list(unmatched)


def sessions_of(turn_ids: Iterable[str], turn_to_session: dict[str, str]) -> list[str]:
    """Session ids holding the given turns, in first-mention order."""
    seen: dict[str, None] = {}
    for t in turn_ids:
        if t in turn_to_session:
            seen.setdefault(turn_to_session[t], None)
    return list(seen)
