"""Property: whatever happens to a conversation and its builds — sessions added, a session growing,
turns edited or deleted, a build killed midway, an LLM failing transiently — once a build has
finished cleanly, the store equals a fresh build of the final conversation: units, claim
embeddings, traces and latest states, in the same order."""

from __future__ import annotations

import dataclasses
import json
import random
import re

import numpy as np
import pytest

from qgmem.construct.build import BuildConfig, build_memory, is_complete
from qgmem.construct.llm_extract import LLMExtractor
from qgmem.construct.traces import TraceConfig
from qgmem.llm import ScriptedBackend
from qgmem.store import MemoryStore
from qgmem.testing.hash_embedder import HashEmbedder
from qgmem.types import Conversation, Session, Turn

PEOPLE = ["Alice", "Bob"]
FACTS = ["I work at {p}.", "I moved to {c}.", "I quit my job at {p}.", "My teacher is {n}.", "I live in {c} now.",
         "I started working at {p} last week.", "We visited {c} with {n}.", "I adopted a cat named {n}."]
PLACES = {"p": ["Acme", "Globex", "Initech", "Hooli"], "c": ["Paris", "Lyon", "Oslo", "Kyoto"],
          "n": ["Rex", "Maya", "Omar", "Lena"]}
CFG = BuildConfig(extractor="llm", consolidation="rule", embedder="hash", traces=TraceConfig())


def _sentence(rng: random.Random) -> str:
    return rng.choice(FACTS).format(**{k: rng.choice(v) for k, v in PLACES.items()})


def _reply(request) -> str:
    """One unit per [NEW] turn, its claim the turn text: a deterministic LLM extractor."""
    units = []
    for tid, speaker, text in re.findall(r"^\[([^\]]+)\] \[NEW\] (\w+): (.*)$", request.messages[0]["content"], re.M):
        obj = re.findall(r"[A-Z]\w+", text)[-1] if re.findall(r"[A-Z]\w+", text) else "it"
        units.append({"claim": f"{speaker}: {text}", "first_turn": tid, "last_turn": tid, "speaker": speaker,
                      "subject": speaker, "relation": text.split()[1] if len(text.split()) > 1 else "say",
                      "object": obj, "entities": [obj], "location": None, "fact_time_start": None,
                      "fact_time_end": None})
    return json.dumps({"units": units})


class Flaky(ScriptedBackend):
    """Fails the calls whose ordinal is in `fail` (a transient outage), answers the rest."""

    def __init__(self, fail: set[int]):
        self.fail, self.n = fail, 0
        super().__init__(self._answer, model="scripted-extractor")

    def _answer(self, request):
        self.n += 1
        return RuntimeError("503 transient") if self.n in self.fail else _reply(request)


class Killed(Exception):
    pass


class KillAfter(LLMExtractor):
    """The same extractor, dying (like kill -9 between two commits) after `n` windows."""

    def __init__(self, backend: ScriptedBackend, n: int):
        super().__init__(backend)
        self.n = n

    def run(self, windows, ns, speakers):
        for i, res in enumerate(super().run(windows, ns, speakers)):
            if i == self.n:
                raise Killed()
            yield res


def _snapshot(store: MemoryStore, ns: str) -> dict:
    emb = store.get_embeddings(ns, "claim")
    return {"units": [dataclasses.asdict(u) for u in store.units(ns)],
            "traces": [dataclasses.asdict(t) for t in store.traces(ns)],
            "claim_ids": emb[0] if emb else None,
            "claims": np.round(emb[1], 6).tolist() if emb else None}


def _ops(rng: random.Random, conv: Conversation, store: MemoryStore) -> None:
    """One random step: change the conversation and/or run a build that may be killed or flaky."""
    op = rng.choice(["add-session", "grow-session", "edit-turn", "delete-turn", "kill", "flaky", "build"])
    sessions = conv.sessions
    if op == "add-session":
        k = len(sessions) + 1
        sessions.append(Session(f"S{k}", f"2023-0{min(k, 9)}-1{k % 10}",
                                [Turn(f"D{k}:{i}", PEOPLE[i % 2], _sentence(rng)) for i in range(rng.randint(2, 9))]))
    elif op == "grow-session":
        s = sessions[-1]
        n = max(int(t.id.split(":")[1]) for t in s.turns) + 1 if s.turns else 0
        s.turns += [Turn(f"{s.id.replace('S', 'D')}:{n + i}", PEOPLE[(n + i) % 2], _sentence(rng))
                    for i in range(rng.randint(1, 4))]
    elif op == "edit-turn":
        t = rng.choice(conv.turns())
        t.text = _sentence(rng)
    elif op == "delete-turn" and len(conv.turns()) > 3:
        s = rng.choice([s for s in sessions if len(s.turns) > 1] or sessions)
        s.turns.pop(rng.randrange(len(s.turns)))
    if op in ("kill", "flaky", "build") or rng.random() < 0.5:
        backend = Flaky({rng.randint(1, 4), rng.randint(1, 6)} if op == "flaky" else set())
        extractor = KillAfter(backend, rng.randint(0, 3)) if op == "kill" else LLMExtractor(backend)
        try:
            build_memory(conv, extractor, llm=backend, store=store, config=CFG, embedder=HashEmbedder(dim=32))
        except Killed:
            pass


@pytest.mark.parametrize("seed", range(40))
def test_any_history_of_edits_failures_and_resumes_ends_like_a_fresh_build(tmp_path, seed: int) -> None:
    rng = random.Random(seed)
    conv = Conversation("c", [Session("S1", "2023-01-05", [Turn(f"D1:{i}", PEOPLE[i % 2], _sentence(rng))
                                                          for i in range(rng.randint(3, 8))])], speakers=PEOPLE)
    store = MemoryStore(tmp_path / "lived")
    for _ in range(rng.randint(4, 9)):
        _ops(rng, conv, store)
    healthy = Flaky(set())
    build_memory(conv, LLMExtractor(healthy), llm=healthy, store=store, config=CFG, embedder=HashEmbedder(dim=32))
    fresh = MemoryStore(tmp_path / "fresh")
    build_memory(conv, LLMExtractor(healthy), llm=healthy, store=fresh, config=CFG, embedder=HashEmbedder(dim=32))
    assert is_complete(store, "c") and is_complete(fresh, "c")
    assert _snapshot(store, "c") == _snapshot(fresh, "c")
    assert store.get_conversation("c") == fresh.get_conversation("c")
