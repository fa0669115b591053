"""Where the link of a change turn goes (construct/turn_changes.py): which of its units carries it, to which unit of
the turn whose state it changes.

A turn keeps several units (one per clause); the link goes from the one whose own words meet the target's most, to
the target turn's unit that best meets the change's words, a claim before a whole-turn "say" unit. A turn whose
units are all updates already is moved only where those updates were guesses about the other speaker's words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from qgmem.construct.state_cues import thing_words
from qgmem.types import AtomicUnit


@dataclass
class Turn:
    """A turn as the change rules read it: its units (rows), content words and the sentences telling a change."""

    id: str
    speaker: str
    session: str
    position: int
    units: list[int]
    words: frozenset[str]
    change_words: frozenset[str] = frozenset()  # words of the sentences that tell a change (none: no change)
    told: str = ""  # those sentences
    things: frozenset[str] = frozenset()  # words of a thing they tell has gone ("the pigeons went to ..."), if named
    end_words: frozenset[str] = frozenset()  # words of the sentences among them that tell an ending ("I left the farm")
    gone: frozenset[str] = frozenset()  # words of the thing they name as gone ("The piano is gone."): one is enough


def change_link(units: list[AtomicUnit], t: Turn, free: list[int], target: int, updates: Mapping[int, set[int]],
                said: Mapping[int, frozenset[str]]) -> dict[int, tuple[int, str]]:
    """{the unit of `t` (one of `free`) that meets `target`'s words most: (target, "change")}, or nothing when an
    update of the turn already supersedes `target`."""
    if any(target in updates[r] for r in t.units if r in updates):
        return {}
    return {best_unit(units, free, said.get(target, frozenset())): (target, "change")}


def retarget(units: list[AtomicUnit], t: Turn, target: int, updates: Mapping[int, set[int]],
             said: Mapping[int, frozenset[str]]) -> dict[int, tuple[int, str]]:
    """{an update of `t`: (target, "change")} when every unit of the turn is an update already, but only of what the
    other speaker said, sharing no word with what the turn says changed, while `target` does ("Is your lad still
    canoeing with the Sea Scouts?" - "He swapped the Scouts for a Saturday job": the question is no state, the
    earlier "He's in the Sea Scouts" is). The turn's words decide over that guess, not over the speaker's own."""
    superseded = {s for r in t.units for s in updates.get(r, ())}
    if (target in superseded or any(units[s].speaker == t.speaker for s in superseded)
            or any(said.get(s, frozenset()) & t.change_words for s in superseded)):
        return {}
    return {best_unit(units, t.units, said.get(target, frozenset())): (target, "change")}


def best_unit(units: list[AtomicUnit], rows: list[int], words: frozenset[str]) -> int:
    """The unit of a turn whose own words meet `words` most; a claim (not "say") first, then dialogue order."""
    def score(r: int) -> tuple[int, int, int]:
        u = units[r]
        mine = thing_words(u.text) | thing_words(u.object)
        return (u.relation.strip().lower() != "say", len(mine & words), -r)

    return max(rows, key=score)
