"""LLM backend speed: each number is a ratio against a baseline measured in the same run.

1. HTTP: complete_many at max_concurrency=N vs 1, against the local test server with fixed latency.
2. Cache: the same deterministic requests cold (server) vs warm (SQLite cache).
3. Local HF (SmolLM2 on CPU): batched complete_many (left padding) vs one request at a time.

    python bench/bench_llm.py [--requests 32] [--latency 0.05] [--concurrency 8] [--hf-prompts 8] [--no-hf]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


from qgmem.testing.openai_server import OpenAIServer

from qgmem.llm import ChatRequest
from qgmem.llm.cache import CachedBackend
from qgmem.llm.http import OpenAIChatBackend


def _reqs(n: int, max_tokens: int = 16) -> list[ChatRequest]:
    return [ChatRequest([{"role": "user", "content": f"Question {i}: what is {i} + {i}?"}], max_tokens=max_tokens)
            for i in range(n)]


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_http(n: int, latency: float, conc: int) -> None:
    def reply(req: dict) -> str:
        time.sleep(latency)
        return "ok"

    with OpenAIServer(reply) as srv:
        seq = OpenAIChatBackend(srv.base_url, "bench", max_concurrency=1)
        par = OpenAIChatBackend(srv.base_url, "bench", max_concurrency=conc)
        t1 = _timed(lambda: seq.complete_many(_reqs(n)))
        tn = _timed(lambda: par.complete_many(_reqs(n)))
        print(f"http  {n} requests, {latency * 1000:.0f} ms latency: concurrency 1 {t1:.2f}s, "
              f"concurrency {conc} {tn:.2f}s (peak in flight {srv.max_in_flight}) -> speedup x{t1 / tn:.1f}")
        with tempfile.TemporaryDirectory() as d:
            cached = CachedBackend(OpenAIChatBackend(srv.base_url, "bench", max_concurrency=conc), d)
            cold = _timed(lambda: cached.complete_many(_reqs(n)))
            warm = _timed(lambda: cached.complete_many(_reqs(n)))
            u = cached.usage.phases["default"]
            print(f"cache {n} requests: cold {cold:.3f}s, warm {warm:.3f}s -> speedup x{cold / warm:.0f} "
                  f"(calls {u.calls}, cached {u.cached}, new prompt tokens {u.prompt_tokens}, "
                  f"saved prompt tokens {u.cached_prompt_tokens})")


def bench_hf(n: int, max_tokens: int) -> None:
    from qgmem.llm.hf import HFChatBackend, local_model_path

    be = HFChatBackend(local_model_path("smollm2"), device="cpu", max_new_tokens=max_tokens, batch_size=n)
    reqs = _reqs(n, max_tokens)
    be.complete(reqs[0])  # warm-up
    one: list = []
    t1 = _timed(lambda: one.extend(be.complete(r) for r in reqs))
    many: list = []
    tb = _timed(lambda: many.extend(be.complete_many(reqs)))
    tok1 = sum(r.completion_tokens for r in one)
    tokb = sum(r.completion_tokens for r in many)
    same = sum(a.text == b.text for a, b in zip(one, many))
    print(f"hf    SmolLM2-135M cpu, {n} prompts x {max_tokens} new tokens: one-by-one {tok1 / t1:.1f} tok/s, "
          f"batched {tokb / tb:.1f} tok/s -> speedup x{(tokb / tb) / (tok1 / t1):.1f} "
          f"(identical greedy outputs {same}/{n})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--hf-prompts", type=int, default=8)
    ap.add_argument("--hf-tokens", type=int, default=16)
    ap.add_argument("--no-hf", action="store_true")
    a = ap.parse_args()
    print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    bench_http(a.requests, a.latency, a.concurrency)
    if not a.no_hf:
        bench_hf(a.hf_prompts, a.hf_tokens)


if __name__ == "__main__":
    main()
