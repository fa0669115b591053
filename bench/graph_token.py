"""Graph-token model cost on SmolLM2-135M (CPU): (1) inference forward with the graph token vs the
text-only control (`use_graph=False`, baseline) on the same batch; (2) a training step (forward +
backward through the frozen LLM, which the encoder's gradient needs) vs that forward; (3) batched
greedy generation with graph tokens vs one prompt at a time (baseline). CPU seconds of this process
(single thread), best of ``--repeat``; ratios printed; batched outputs checked equal to single ones.

    python bench/graph_token.py [--examples 4] [--repeat 2] [--new-tokens 8]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch



def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--new-tokens", type=int, default=8)
    args = ap.parse_args()
    torch.set_num_threads(1)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from qgmem.embed import get_embedder
    from qgmem.graph import GraphConfig, feature_dims
    from qgmem.model import EncoderConfig
    from qgmem.llm.hf import local_model_path
    from qgmem.model import GraphTokenLM, InputConfig, build_example
    from qgmem.types import AtomicUnit, MemoryItem, Question, WorkingMemory

    path = local_model_path("smollm2")
    llm = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(path)
    emb = get_embedder()
    gcfg = GraphConfig()
    nd, ed = feature_dims(gcfg, emb.dim)
    torch.manual_seed(0)
    lm = GraphTokenLM(llm, tok, EncoderConfig(node_dim=nd, edge_dim=ed, dropout=0.0), graph_cfg=gcfg)

    exs = []
    for i in range(args.examples):
        q = Question(f"q{i}", f"Where did person{i} go in week {i}?", ["x"], "4")
        items = []
        for j in range(2 + i):  # different memory sizes -> different prompt lengths
            u = AtomicUnit(f"u{i}-{j}", "ns", "S1", f"Person{i} visited city{j} with friend{j}.", f"D1:{j}",
                           f"D1:{j}", [f"D1:{j}"], f"Person{i}", "I", "visited", f"city{j}", utterance_time="2023-05-08")
            items.append(MemoryItem(f"M{j + 1}", "unit", u.text, u.turn_ids, unit=u))
        exs.append(build_example(WorkingMemory(q, items, "qgmem"), emb.encode,
                                 InputConfig(graph=gcfg, text_with_graph=True), answer=f"city{i}", embed_dim=emb.dim))
    system = "Answer the question from the memory."
    batch = lm.make_collator(1024, system=system)(exs)
    gen = lm.make_collator(1024, mode="generate", system=system)

    def forward() -> None:
        with torch.no_grad():
            lm(batch)

    def step() -> None:
        lm.zero_grad()
        lm(batch).loss.backward()

    lm.eval()
    lm.use_graph = False
    t_text = best(forward, args.repeat)
    lm.use_graph = True
    t_graph = best(forward, args.repeat)
    lm.train()
    t_step = best(step, args.repeat)
    t_enc = best(lambda: lm.graph_encoder(batch["graph"]).sum().backward(), args.repeat)
    lm.eval()
    t_single = best(lambda: [lm.generate(gen([e]), max_new_tokens=args.new_tokens) for e in exs], 1)
    t_batched = best(lambda: lm.generate(gen(exs), max_new_tokens=args.new_tokens), 1)
    same = lm.generate(gen(exs), max_new_tokens=args.new_tokens) == \
        [lm.generate(gen([e]), max_new_tokens=args.new_tokens)[0] for e in exs]
    n_tok = int(batch["attention_mask"].sum())
    print(f"batch: {len(exs)} examples, {n_tok} tokens (+{lm.num_graph_tokens} graph token/example), "
          f"{sum(e.graph.num_edges for e in exs)} edges")
    print(f"forward     text-only (baseline) {t_text:.2f} s | with graph token {t_graph:.2f} s | "
          f"ratio x{t_graph / t_text:.3f} | encoder+projector fwd+bwd alone {t_enc:.3f} s")
    print(f"train step  fwd+bwd {t_step:.2f} s | vs graph forward x{t_step / t_graph:.2f}")
    print(f"generate    one at a time (baseline) {t_single:.2f} s | batched {t_batched:.2f} s | "
          f"speed-up x{t_single / t_batched:.2f} | batched == single: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
