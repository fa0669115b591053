"""Rule-extraction throughput vs plain MiniLM encoding of the same turns, in the same run.

The rule extractor (spaCy parse + facts) is the CPU default; it should not be the bottleneck of a build,
i.e. it should process turns at least as fast as MiniLM can merely encode them (goal: ratio >= 1).

    QGMEM_DATA_DIR=/work/shared/data python bench/construction.py [--encode-turns 1000] [--repeat 3]

Both sides are timed on the same turns: the new turns of LoCoMo's windows (6 turns, 2 of context), in
order, until --encode-turns turns. The extractor gets each conversation's windows in one `run()`, as a
build does (spaCy parses them in batches); MiniLM encodes the rendered turns. Best of --repeat, as wall
time and as CPU time of this process (MiniLM's CPU time counts all torch threads). The spaCy pipeline is
loaded and both sides warmed up before timing.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _windows(n_turns: int) -> list[tuple[object, list[object]]]:
    """(conversation, its windows) whose new turns add up to `n_turns` (the last window may be cut short)."""
    from qgmem.construct.windows import make_windows
    from qgmem.data.locomo import load_locomo

    out, left = [], n_turns
    for c in load_locomo():
        ws = []
        for s in c.sessions:
            for w in make_windows(s):
                if left <= 0:
                    break
                if len(w.new_turns) > left:  # keep the context, cut the new turns
                    w = type(w)(w.session_id, w.index, w.context_turns + w.new_turns[:left], w.context_turns,
                                w.new_turns[:left], w.session_date, w.session_date_text)
                ws.append(w)
                left -= len(w.new_turns)
        if ws:
            out.append((c, ws))
        if left <= 0:
            break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encode-turns", type=int, default=1000, help="turns timed on both sides")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64, help="MiniLM batch size")
    args = ap.parse_args()

    from qgmem.construct.nlp import load_nlp, nlp_identity
    from qgmem.construct.rule import RuleExtractor
    from qgmem.embed import get_embedder

    convs = _windows(args.encode_turns)
    texts = [t.render() for _, ws in convs for w in ws for t in w.new_turns]
    ex = RuleExtractor()
    load_nlp(ex.config.nlp_model)
    emb = get_embedder("minilm")
    emb.batch_size = args.batch_size
    emb.encode(texts[:64])  # warm-up (thread pools, first-call allocation)
    c0, w0 = convs[0]
    list(ex.run(w0[:8], c0.id, c0.speakers))  # warm-up of the parser

    rule_cpu, rule_wall, enc_cpu, enc_wall, n_units = [], [], [], [], 0
    for _ in range(args.repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        n_units = sum(len(r.units) for c, ws in convs for r in ex.run(ws, c.id, c.speakers))
        rule_cpu.append(time.process_time() - c0)
        rule_wall.append(time.perf_counter() - w0)
        c0, w0 = time.process_time(), time.perf_counter()
        emb.encode(texts)
        enc_cpu.append(time.process_time() - c0)
        enc_wall.append(time.perf_counter() - w0)
    n = len(texts)
    rc, rw, ec, ew = min(rule_cpu), min(rule_wall), min(enc_cpu), min(enc_wall)
    print(f"turns: {n}  rule units: {n_units}  pipeline: {nlp_identity(ex.config.nlp_model)}  "
          f"(best of {args.repeat}; torch threads: {torch_threads()})")
    print("| measurement | turns/s (wall) | wall s | CPU s |")
    print("|---|---|---|---|")
    print(f"| MiniLM encode of the rendered turns (baseline, batch {args.batch_size}) | {n / ew:.0f} | {ew:.2f} | {ec:.2f} |")
    print(f"| rule extraction of the same turns (spaCy parse, batch {ex.batch_size}; units + attributes + time) "
          f"| {n / rw:.0f} | {rw:.2f} | {rc:.2f} |")
    print(f"ratio rule/MiniLM throughput: wall x{ew / rw:.2f}, CPU x{ec / rc:.2f}  (goal >= 1)")


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


if __name__ == "__main__":
    main()
