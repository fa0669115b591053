"""Cost of growing a memory: one new session added to a 10,000-turn namespace vs rebuilding it.

    python bench/lifecycle.py [--turns 10000] [--session-turns 10] [--seed 0]

Both go through `MemoryPipeline.add` (rule extraction, traces, retrieval index with the packaged
MiniLM), in one process, on one generated conversation. The rebuild builds the whole namespace in a
fresh store; the increment adds one session to the already built store. Prints both wall times and
the ratio (goal: <= 2 % of the rebuild), and checks that the grown memory equals a fresh build of the
grown conversation.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import pstats
import random
import tempfile
import time
from pathlib import Path

from qgmem.llm.scripted import ScriptedBackend
from qgmem.pipeline import MemoryPipeline
from qgmem.retrieve.config import RetrievalConfig
from qgmem.types import Conversation, Session, Turn

SUBJECTS = ["my sister", "our neighbour", "my manager", "the new intern", "my old teacher", "a friend from school"]
VERBS = ["visited", "recommended", "talked about", "bought", "painted", "fixed", "planned", "cancelled", "joined"]
OBJECTS = ["the bakery on {s} Street", "a trip to {c}", "the ceramics class", "a vintage bike", "the garden shed",
           "a concert in {c}", "the chess club", "a cooking course", "the marathon in {c}", "a used piano"]
STREETS = ["Kirk", "Elm", "Mill", "Harbour", "Station", "Church"]
CITIES = ["Lyon", "Oslo", "Porto", "Kyoto", "Austin", "Leeds", "Graz", "Quito"]
WHEN = ["yesterday", "last week", "two weeks ago", "on Friday", "last month", "this morning", "in March"]


def sentence(rng: random.Random, i: int) -> str:
    obj = rng.choice(OBJECTS).format(s=rng.choice(STREETS), c=rng.choice(CITIES))
    return f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {obj} {rng.choice(WHEN)} (note {i})."


def make_session(rng: random.Random, k: int, n: int) -> Session:
    day = f"2021-{1 + (k // 28) % 12:02d}-{1 + k % 28:02d}"
    return Session(f"s{k}", day, [Turn(f"D{k}:{j}", "Ann" if j % 2 else "Ben", sentence(rng, k * 1000 + j))
                                  for j in range(1, n + 1)])


def pipeline(store: Path) -> MemoryPipeline:
    retrieval = RetrievalConfig()
    retrieval.rerank.kind = "none"
    return MemoryPipeline(llm=ScriptedBackend([]), store_dir=store, retrieval=retrieval)  # no answers here


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=10_000)
    ap.add_argument("--session-turns", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="print the N most expensive functions of the add (cProfile, cumulative time)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    n_sessions = args.turns // 50
    conv = Conversation("bench", [make_session(rng, k, 50) for k in range(n_sessions)], speakers=["Ann", "Ben"])
    new = make_session(rng, n_sessions, args.session_turns)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pipeline(root / "warm").add(Conversation("warm", [make_session(rng, 0, 8)]))  # load MiniLM once
        t0 = time.perf_counter()
        grown = pipeline(root / "grown").add(conv)
        rebuild_s = time.perf_counter() - t0
        prof = cProfile.Profile() if args.profile else None
        t0 = time.perf_counter()
        if prof is not None:
            prof.enable()
        grown.add([new], namespace="bench")
        add_s = time.perf_counter() - t0
        if prof is not None:
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(args.profile)
        fresh = pipeline(root / "fresh").add(dataclasses.replace(conv, sessions=conv.sessions + [new]))
        same = [dataclasses.asdict(u) for u in grown.store.units("bench")] == \
            [dataclasses.asdict(u) for u in fresh.store.units("bench")]
        same_traces = grown.store.traces("bench") == fresh.store.traces("bench")
        g_grown, g_fresh = grown.retriever._index["bench"].graph, fresh.retriever._index["bench"].graph
        same_graph = [g_grown.keys(i) for i in range(g_grown.n)] == [g_fresh.keys(i) for i in range(g_fresh.n)]
    print(f"namespace: {len(conv.turns()):,} turns in {n_sessions} sessions; new session: {args.session_turns} turns")
    print(f"rebuild (fresh store, whole namespace): {rebuild_s:8.2f} s")
    print(f"add one session to the built store:     {add_s:8.2f} s")
    print(f"ratio add / rebuild: {100 * add_s / rebuild_s:.2f} % (goal <= 2 %)")
    print(f"grown memory equals a fresh build of the grown conversation: units {same}, traces {same_traces}, "
          f"graph {same_graph} (graph keys computed by the add: {g_grown.computed} of {g_grown.n} units)")
    return 0 if same and same_traces and same_graph else 1


if __name__ == "__main__":
    raise SystemExit(main())
