"""The speed-ups behind the full LongMemEval-S retrieval run, each against its baseline in the same run.

    python bench/longmemeval_speed.py [--questions 12] [--texts 1500]

1. Embedding: the packaged MiniLM (inputs cut at 128 word pieces) in float32 vs `:bf16` (bfloat16 matrix
   products; native on CPUs with AMX / AVX512-BF16), on one thread, over real haystack turns and over the
   entity names the attribute channel embeds; texts/s, the ratio and the cosine between the two vectors.
2. Rule extraction: the haystacks of the first `--questions` questions in order, every window parsed
   vs windows remembered by content (a session shared by several haystacks is parsed once); turns/s,
   the ratio and whether both give the same units.
The third, `workers: 2` (two processes, one thread each), shows in the full run itself: both cores busy
(CPU utilisation in bench/RESULTS.md), not measured against one worker here. Reads $QGMEM_DATA_DIR; one thread.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from qgmem.construct.rule import RuleExtractor, forget_remembered_claims  # noqa: E402
from qgmem.construct.windows import make_windows  # noqa: E402
from qgmem.data.longmemeval import iter_longmemeval  # noqa: E402
from qgmem.embed import get_embedder, native_bf16  # noqa: E402


def _haystacks(n: int) -> list:
    out = []
    for conv in iter_longmemeval("s"):
        out.append(conv)
        if len(out) == n:
            break
    return out


def _rate(fn, n: int) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return n / (time.perf_counter() - t0), out


def bench_embedding(convs: list, n_texts: int) -> list[str]:
    turns = list(dict.fromkeys(t.text for c in convs for s in c.sessions for t in s.turns))[:n_texts]
    names = list(dict.fromkeys(w.strip(".,!?") for t in turns for w in t.split() if w[:1].isupper()))[:n_texts]
    fp32, bf16 = get_embedder("minilm@128"), get_embedder("minilm@128:bf16")
    fp32.encode(turns[:64]), bf16.encode(turns[:64])  # warm-up
    lines = []
    for what, texts in (("haystack turns", turns), ("entity names", names)):
        r32, a = _rate(lambda: fp32.encode(texts), len(texts))
        r16, b = _rate(lambda: bf16.encode(texts), len(texts))
        cos = (np.asarray(a) * np.asarray(b)).sum(1)
        lines.append(f"| embed {what} ({len(texts)}) | {r32:,.0f} texts/s fp32 | {r16:,.0f} texts/s bf16 | "
                     f"{r16 / r32:.2f}x | cosine min {cos.min():.5f}, mean {cos.mean():.6f} |")
    return lines


def bench_extraction(convs: list) -> list[str]:
    def run(remember: bool) -> list:
        units = []
        forget_remembered_claims()
        for c in convs:
            if not remember:
                forget_remembered_claims()
            ex = RuleExtractor()
            windows = [w for s in c.sessions for w in make_windows(s)]
            units += [(u.text, u.turn_ids, u.entities) for r in ex.run(windows, c.id, c.speakers) for u in r.units]
        return units

    n_turns = sum(len(s.turns) for c in convs for s in c.sessions)
    run(False)  # load spaCy outside the timing
    r0, plain = _rate(lambda: run(False), n_turns)
    r1, memo = _rate(lambda: run(True), n_turns)
    distinct = len({tuple((t.speaker, t.text) for t in s.turns) for c in convs for s in c.sessions})
    sessions = sum(len(c.sessions) for c in convs)
    return [f"| rule extraction, {len(convs)} haystacks ({sessions} sessions, {distinct} distinct) | "
            f"{r0:,.0f} turns/s parsed | {r1:,.0f} turns/s remembered | {r1 / r0:.2f}x | same units: {plain == memo} |"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=int, default=12, help="haystacks (LongMemEval-S questions, in file order)")
    ap.add_argument("--texts", type=int, default=1500, help="texts per embedding measurement")
    a = ap.parse_args()
    torch.set_num_threads(1)
    convs = _haystacks(a.questions)
    print(f"CPU bfloat16 units (AMX / AVX512-BF16): {native_bf16("cpu")}; torch threads: {torch.get_num_threads()}")
    print("\n| what | baseline | faster path | ratio | check |\n|---|---|---|---|---|")
    for line in bench_embedding(convs, a.texts) + bench_extraction(convs):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
