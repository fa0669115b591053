"""Parsed turns for a run of windows: every turn parsed once, in batches, lazily, in window order.

Windows overlap (a window's context turns are new turns of the one before), so a turn is keyed by
id and text and parsed once; docs are pulled from `nlp.pipe` only as far as the current window needs,
so a build can commit window after window while the parser keeps batching.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from qgmem.construct.nlp import parse
from qgmem.types import Turn

if TYPE_CHECKING:
    from spacy.tokens import Doc


def turn_key(turn: Turn) -> tuple[str, str]:
    return (turn.id, turn.text)


class TurnDocs:
    """`get(turn)` -> its Doc (None for a turn longer than `max_chars`, which is not parsed)."""

    def __init__(self, turns: list[Turn], model: str, batch_size: int, max_chars: int):
        self.max_chars = max_chars
        keys = dict.fromkeys(turn_key(t) for t in turns if len(t.text) <= max_chars)
        self._pending = list(keys)  # in parse order
        self._model, self._batch_size = model, batch_size
        self._stream: Iterator[Doc] | None = None
        self._next = 0  # index in _pending of the next doc the stream yields
        self._docs: dict[tuple[str, str], Doc] = {}

    def get(self, turn: Turn) -> Doc | None:
        if len(turn.text) > self.max_chars:
            return None
        key = turn_key(turn)
        if key not in self._docs:
            if self._stream is None:  # the pipeline is loaded on the first turn that needs it
                self._stream = parse((k[1] for k in self._pending), self._model, self._batch_size)
            while key not in self._docs:
                if self._next >= len(self._pending):
                    raise KeyError(f"turn {turn.id!r} was not among the turns of this run")
                self._docs[self._pending[self._next]] = next(self._stream)
                self._next += 1
        return self._docs[key]

    def keep_only(self, turns: list[Turn]) -> None:
        """Drop the docs of turns before these (earlier windows), keeping memory flat over a build."""
        keep = {turn_key(t) for t in turns}
        for k in [k for k in self._docs if k not in keep]:
            del self._docs[k]
