"""Evaluation-loop speed: (1) bootstrap CIs, vectorised+chunked vs a per-resample loop; (2) judging a
batch of answers over HTTP, parallel (the runner) vs one question at a time. Baselines run in the
same process; ratios are printed.

    python bench/evaluation.py [--questions 48] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np



def bootstrap_loop(values: np.ndarray, n: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    means = [values[rng.integers(0, len(values), len(values))].mean() for _ in range(n)]
    lo, hi = np.quantile(means, [0.025, 0.975])
    return float(lo), float(hi)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=48)
    ap.add_argument("--latency", type=float, default=0.05)
    args = ap.parse_args()
    from qgmem.evaluation.bootstrap import bootstrap_ci

    vals = np.random.default_rng(0).random(1986)  # LoCoMo size
    t0 = time.perf_counter()
    base = bootstrap_loop(vals, 10_000, 0)
    t_loop = time.perf_counter() - t0
    t0 = time.perf_counter()
    ci = bootstrap_ci(vals, 10_000, 0)
    t_vec = time.perf_counter() - t0
    print(f"bootstrap 10,000 x 1,986: loop {t_loop:.2f} s, chunked numpy {t_vec:.2f} s, x{t_loop / t_vec:.1f} "
          f"(CI loop [{base[0]:.4f}, {base[1]:.4f}] vs [{ci.low:.4f}, {ci.high:.4f}])")

    from qgmem.testing.openai_server import OpenAIServer

    from qgmem.evaluation.judge import Judge
    from qgmem.llm import LLMConfig, make_backend
    from qgmem.types import Question

    qs = [Question(f"q{i}", f"question {i}?", [f"answer {i}"], "4") for i in range(args.questions)]
    reply = json.dumps({"reason": "same", "label": "CORRECT"})
    with OpenAIServer(lambda req: reply, delay_s=args.latency) as srv:
        backend = make_backend(LLMConfig(backend="openai", model="judge", base_url=srv.base_url, cache=False,
                                         max_concurrency=8))
        judge = Judge(backend, "locomo", repeats=3)
        t0 = time.perf_counter()
        seq = [judge.judge(q, "answer").score for q in qs]
        t_seq = time.perf_counter() - t0
        from concurrent.futures import ThreadPoolExecutor

        t0 = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            par = list(pool.map(lambda q: judge.judge(q, "answer").score, qs))
        t_par = time.perf_counter() - t0
    assert seq == par
    print(f"judge {args.questions} questions x 3 runs, {args.latency * 1000:.0f} ms server latency: sequential "
          f"{t_seq:.2f} s, 8 in parallel {t_par:.2f} s, x{t_seq / t_par:.1f} (peak in flight {srv.max_in_flight})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
