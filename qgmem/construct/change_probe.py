"""A learned reading of whole turns for the traces: does a turn tell that a state changed, does it tell a state,
and which earlier turn's state a change changes (QGMem §III-A2, the change no rule of construct/turn_changes.py
reads).

The rules read a change from its words ("no longer", "sold it", "moved the lesson to"); people tell changes in more
ways than any list holds ("I've parked the van for good. Since August I've worn the ranger's uniform", "croquet is
behind me"). The probe reads the turn's sentence vector instead: two logistic heads over the MiniLM vector of the
turn's text, and a third over the elementwise product of two turns' vectors (does the later one change the earlier
one's state: "Nugzar and I are finished" of "I'm seeing Nugzar", where a class read of each turn alone disagrees),
trained by `qgmem train-change-probe` (qgmem/training/change_probe_fit.py) on the development sets of labelled
updates, with multi-session chit-chat as further turns that change nothing.

It links only what the rules left: a turn of a later session whose units are neither updates nor links, that reads
as a change (`change >= change_floor`) and is a statement of the speaker's own (no question, no state told again,
not an assistant's, not a shared image's caption), links the same speaker's earlier-session turn that best reads as
the state it changes (`state x pair`, with `state >= state_floor` and `pair >= pair_floor`), unit to unit as the
rules do. The floors are in the checkpoint, chosen on development sets the probe was not fitted on.

A checkpoint is a folder with `probe.json` (the embedder it reads, the floors, how it was trained) and
`probe.safetensors` (the weights); scoring is numpy, so the build needs no torch beyond the embedder's.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from qgmem.construct.change_targets import best_unit
from qgmem.construct.state_cues import thing_words
from qgmem.construct.turn_changes import RESTATED
from qgmem.errors import UserError
from qgmem.io import read_weights_folder, write_weights_folder
from qgmem.paths import repo_checkpoint
from qgmem.types import AtomicUnit

if TYPE_CHECKING:
    from qgmem.store import MemoryStore

PROBE_VECTORS = "turns-probe"  # the store's embedding kind of the turn vectors the probe reads
CONFIG_FILE = "probe.json"
WEIGHTS_FILE = "probe.safetensors"
HEADS = ("change", "state", "pair")
ASSISTANT = "assistant"  # the other side of a user-assistant chat: it tells no state of its own
CHUNK = 256  # change turns scored against every stated turn at once
_QUESTION_FIRST = re.compile(r"[^.!?]*\?")  # a turn that opens with a question


class ProbeCheckpointError(ValueError, UserError):
    """A change-probe folder that is missing or incomplete (one line, exit code 2)."""


@dataclass
class ProbeSpec:
    embedder: str  # the embedder whose turn vectors the heads read (a build with another one skips the probe)
    change_floor: float  # a turn reads as a change at this probability or more
    state_floor: float  # the earlier turn it links reads as a state at this probability or more
    pair_floor: float  # and the pair head reads the change as changing that turn's state at this probability or more
    info: dict[str, object] = field(default_factory=dict)  # training data, fit, held-out figures


@dataclass(frozen=True)
class TurnReadings:
    """The probe's reading of turns, one row each."""

    change: np.ndarray  # (n,) probability that the turn tells a change of a state
    state: np.ndarray  # (n,) probability that it tells a state a later turn changes
    asks: np.ndarray  # (n, d + 1) the turn as a change: its vector times the pair head's weights, then the bias
    told: np.ndarray  # (n, d + 1) the turn as an earlier state: its vector, then 1

    def pair(self, changes: np.ndarray, states: np.ndarray) -> np.ndarray:
        """(len(changes), len(states)) probability that each change turn changes each earlier turn's state."""
        return _sigmoid(self.asks[changes] @ self.told[states].T)


class ChangeProbe:
    """read(vectors) -> the readings of the turns whose L2-normalised vectors are the rows."""

    def __init__(self, spec: ProbeSpec, weights: Mapping[str, np.ndarray]):
        self.spec = spec
        missing = [f"{k}.{p}" for k in HEADS for p in ("weight", "bias") if f"{k}.{p}" not in weights]
        if missing:
            raise ProbeCheckpointError(f"change probe: no {', '.join(missing)} in its weights (a checkpoint from "
                                       "before the pair head; train one with `qgmem train-change-probe`)")
        self.w = {k: np.ascontiguousarray(weights[f"{k}.weight"], dtype=np.float64).reshape(-1) for k in HEADS}
        self.b = {k: float(np.asarray(weights[f"{k}.bias"]).reshape(-1)[0]) for k in HEADS}

    @property
    def dim(self) -> int:
        return int(self.w["change"].shape[0])

    def read(self, vectors: np.ndarray) -> TurnReadings:
        x = np.asarray(vectors, dtype=np.float64).reshape(-1, self.dim)
        ones = np.ones((len(x), 1))
        return TurnReadings(_sigmoid(x @ self.w["change"] + self.b["change"]),
                            _sigmoid(x @ self.w["state"] + self.b["state"]),
                            np.hstack([x * self.w["pair"], ones * self.b["pair"]]), np.hstack([x, ones]))

    @classmethod
    def load(cls, folder: str | Path) -> ChangeProbe:
        spec, weights = read_weights_folder(folder, CONFIG_FILE, WEIGHTS_FILE, ProbeSpec,
                                            "change-probe checkpoint; train one with `qgmem train-change-probe`",
                                            ProbeCheckpointError)
        return cls(spec, weights)

    def save(self, folder: str | Path) -> None:
        tensors = {f"{k}.{p}": np.ascontiguousarray(np.reshape(d[k], -1), dtype=np.float32)
                   for k in HEADS for p, d in (("weight", self.w), ("bias", self.b))}
        write_weights_folder(folder, CONFIG_FILE, WEIGHTS_FILE, self.spec, tensors)


@functools.lru_cache(maxsize=4)
def load_probe(path: str) -> ChangeProbe:
    """The probe of a checkpoint folder (`checkpoints/...` resolves against the checkout), loaded once a process."""
    return ChangeProbe.load(repo_checkpoint(path))


@functools.lru_cache(maxsize=4)
def probe_digest(path: str | None) -> str:
    """What the traces' build key holds of the probe: a digest of its files ("" for none), so stored traces are
    regrouped when it is retrained."""
    if not path:
        return ""
    folder = repo_checkpoint(path)
    h = hashlib.sha1()
    for name in (CONFIG_FILE, WEIGHTS_FILE):
        f = folder / name
        h.update(f.read_bytes() if f.is_file() else b"")
    return h.hexdigest()[:16]


def _may_change(text: str, speaker: str) -> bool:
    """A turn the probe may read as a change: a person's own statement, not a question ("Is the wedding still after
    the rains?"), nor a state told again ("I'm still in the band, bugle and all"), nor an assistant's advice.
    The vector reads these as it reads a change: they talk of the same things."""
    text = text.strip()
    return not (speaker == ASSISTANT or text.endswith("?") or _QUESTION_FIRST.match(text) or RESTATED.search(text))


def _link(units: list[AtomicUnit], rows: list[int], target_rows: list[int]) -> dict[int, tuple[int, str]]:
    """The change turn's unit that best meets the target turn's words, to the target's unit that best meets its own
    (construct/change_targets.py's choice, as for the rules' turn links)."""
    words = frozenset().union(*(thing_words(units[i].text) for i in rows))
    said = frozenset().union(*(thing_words(units[i].text) for i in target_rows))
    return {best_unit(units, rows, said): (best_unit(units, target_rows, words), "change")}


def _codes(values: list[str]) -> np.ndarray:
    """Each value's integer code (first seen first), so that comparing them is a vector operation."""
    code: dict[str, int] = {}
    return np.array([code.setdefault(v, len(code)) for v in values], dtype=np.int64)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


@dataclass(frozen=True)
class ProbeReadings:
    """The probe's readings of one namespace's turns, for `group_traces`."""

    spec: ProbeSpec
    ids: list[str]  # turn ids in dialogue order, the rows of `read`
    read: TurnReadings
    texts: Mapping[str, str]  # turn id -> text


def read_turns(probe: ChangeProbe, turn_texts: Mapping[str, str], encode: Callable[[list[str]], np.ndarray]
               ) -> ProbeReadings:
    """Every turn read by the probe; `encode(texts)` gives their vectors (a store's cache of them, in a build)."""
    ids = list(turn_texts)
    vectors = encode([turn_texts[t] for t in ids]) if ids else np.zeros((0, probe.dim))
    return ProbeReadings(probe.spec, ids, probe.read(vectors), turn_texts)


def build_readings(store: MemoryStore, ns: str, turn_texts: Mapping[str, str], path: str | None
                   ) -> tuple[ProbeReadings | None, str]:
    """(the probe's reading of every turn of a namespace, "") for a build; (None, "") when `path` is None or "" (the
    rules alone), and (None, why) when the embedder the probe was trained on is not what `get_embedder` gives (a test's
    stand-in). The turn vectors are kept in the store like the retrieval index's, so a grown memory encodes only its
    new turns."""
    if not path or not turn_texts:
        return None, ""
    from qgmem.embed import get_embedder, resolve_name

    probe = load_probe(path)
    emb = get_embedder(probe.spec.embedder)
    if emb.name != resolve_name(probe.spec.embedder) or getattr(emb, "dim", probe.dim) != probe.dim:
        return None, (f"change probe {path} reads {probe.spec.embedder} vectors; the embedder here is {emb.name}: "
                      "traces from the rules alone")
    return read_turns(probe, turn_texts,
                      lambda texts: store.cached_vectors(ns, PROBE_VECTORS, texts, emb.encode, emb.name)[0]), ""


def probe_links(units: Sequence[AtomicUnit], readings: ProbeReadings, taken: set[int],
                changed: Iterable[int] = ()) -> dict[int, tuple[int, str]]:
    """{unit of a change turn the rules left: (unit of the earlier-session turn whose state it changes, "change")}.

    `taken`: units that are updates or links already (their turns are left as the rules read them); `changed`: units
    whose state the rules already saw change (a turn holding one is no state for the probe to link: the change
    after it is)."""
    spec, units = readings.spec, list(units)
    turns: dict[str, list[int]] = {}
    for i, u in enumerate(units):
        if not u.shows_image:  # a picture's caption is neither a change nor a state: the probe reads the words
            turns.setdefault(u.first_turn, []).append(i)
    rows = np.array([k for k, t in enumerate(readings.ids) if t in turns], dtype=np.int64)  # turns with units
    if not len(rows):
        return {}
    order = [readings.ids[k] for k in rows]
    change, state = readings.read.change[rows], readings.read.state[rows]
    speaker = _codes([units[turns[t][0]].speaker for t in order])
    session = _codes([units[turns[t][0]].session_id for t in order])
    changers = [k for k in np.flatnonzero(change >= spec.change_floor)
                if not any(i in taken for i in turns[order[k]])
                and _may_change(readings.texts[order[k]], units[turns[order[k]][0]].speaker)]
    gone = {units[i].first_turn for i in changed}
    stated = np.flatnonzero((state >= spec.state_floor) & np.array([t not in gone for t in order]))  # may be linked
    out: dict[int, tuple[int, str]] = {}
    if not changers or not len(stated):
        return out
    target: dict[int, int] = {}  # changer row -> the stated row it links
    for who in np.unique(speaker[changers]):  # only the same speaker's earlier turns are scored: half the pairs
        mine = [k for k in changers if speaker[k] == who]
        theirs = stated[speaker[stated] == who]
        for start in range(0, len(mine), CHUNK):
            ks = np.array(mine[start:start + CHUNK])
            cand = theirs[theirs < ks[-1]]  # earlier than the chunk's last change
            if not len(cand):
                continue
            pair = readings.read.pair(rows[ks], rows[cand])  # (changers, stated turns)
            ok = ((cand[None, :] < ks[:, None]) & (session[cand][None, :] != session[ks][:, None])
                  & (pair >= spec.pair_floor))
            score = np.where(ok, state[cand][None, :] * pair, -1.0)
            last = score.shape[1] - 1 - np.argmax(score[:, ::-1], axis=1)  # the latest on a tie
            target.update((int(k), int(p)) for row, (k, p) in enumerate(zip(ks, cand[last])) if ok[row].any())
    for k in changers:  # in dialogue order, as the rules' links are
        if k in target:
            out.update(_link(units, turns[order[k]], turns[order[target[k]]]))
    return out
