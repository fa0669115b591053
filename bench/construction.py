"""Rule-extraction throughput vs plain MiniLM encoding of the same turns, in the same run.

The rule extractor is the CPU default; it should not be the bottleneck of a build, i.e. it should
process turns at least about as fast as MiniLM can merely encode them (goal: ratio >= 0.8).

    QGMEM_DATA_DIR=/work/shared/data python bench/construction.py [--encode-turns 1000] [--repeat 3]

Both sides are timed on the same turns (the first --encode-turns turns of LoCoMo, in order), best of
--repeat, as wall time and as CPU time of this process (MiniLM's CPU time counts all torch threads).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encode-turns", type=int, default=1000, help="turns timed on both sides")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64, help="MiniLM batch size")
    args = ap.parse_args()

    from qgmem.construct.rule import RuleExtractor
    from qgmem.construct.windows import Window
    from qgmem.data.locomo import load_locomo
    from qgmem.embed import get_embedder

    convs = load_locomo()
    turns = []  # (conversation, session, turn)
    for c in convs:
        for s in c.sessions:
            for t in s.turns:
                turns.append((c, s, t))
    turns = turns[: args.encode_turns]
    # one window per turn (that turn new) so the extractor sees exactly these turns once
    windows = [(c, Window(s.id, i, [t], [], [t], s.date, s.date_text)) for i, (c, s, t) in enumerate(turns)]
    texts = [t.render() for _, _, t in turns]
    ex = RuleExtractor()
    emb = get_embedder("minilm")
    emb.batch_size = args.batch_size
    emb.encode(texts[:64])  # warm-up (thread pools, first-call allocation)

    rule_cpu, rule_wall, enc_cpu, enc_wall, n_units = [], [], [], [], 0
    for _ in range(args.repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        n_units = sum(len(ex.extract(w, c.id, c.speakers)) for c, w in windows)
        rule_cpu.append(time.process_time() - c0)
        rule_wall.append(time.perf_counter() - w0)
        c0, w0 = time.process_time(), time.perf_counter()
        emb.encode(texts)
        enc_cpu.append(time.process_time() - c0)
        enc_wall.append(time.perf_counter() - w0)
    n = len(turns)
    rc, rw, ec, ew = min(rule_cpu), min(rule_wall), min(enc_cpu), min(enc_wall)
    print(f"turns: {n}  rule units: {n_units}  (best of {args.repeat}; torch threads: {torch_threads()})")
    print("| measurement | turns/s (wall) | wall s | CPU s |")
    print("|---|---|---|---|")
    print(f"| MiniLM encode of the rendered turns (baseline, batch {args.batch_size}) | {n / ew:.0f} | {ew:.2f} | {ec:.2f} |")
    print(f"| rule extraction of the same turns (units + attributes + time) | {n / rw:.0f} | {rw:.2f} | {rc:.2f} |")
    print(f"ratio rule/MiniLM throughput: wall x{ew / rw:.1f}, CPU x{ec / rc:.1f}  (goal >= 0.8)")


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


if __name__ == "__main__":
    main()
