"""Positive control for the graph token, one command: can an encoder design carry the question's graph
into the frozen LLM at all, when the answer is in the graph and only there?

Generates the control task (`qgmem.training.graph_control`: people whose home and workplace change
once; test names and values from pools disjoint from training), writes it as a prepared set, trains every
design with `train.py` (configs/train/smollm2_graph_control.yaml + the design's overrides; a finished
design is skipped, an unfinished one resumes from ``last/``; a scored one's scores are reused), then scores
each design's ``best/`` checkpoint
by exact match: on the dev split (graph only vs shuffled graph only: the design is chosen there) and on
the held-out test split under every condition of `qgmem.training.control_eval`, with paired bootstrap
95% intervals, and ends with what each design's tokens look like (norm, spread, nearest vocabulary tokens).

    python bench/graph_control.py [--designs mean_pool query_llm_words ...] [--out DIR] [key=value ...]

Writes ``<out>/summary.json`` and ``<out>/summary.md`` (the tables quoted in bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CONFIG = "configs/train/smollm2_graph_control.yaml"
QUERY = ["encoder.pooling=query", "encoder.num_graph_tokens=3"]
# design -> overrides of the train config; "mean_pool" is the paper's single mean-pooled token
DESIGNS: dict[str, list[str]] = {
    "mean_pool": [],
    "mean_pool_llm": ["encoder.features=llm"],
    "query_sentence": QUERY,
    "query_llm": [*QUERY, "encoder.features=llm"],
    "query_llm_words": [*QUERY, "encoder.features=llm", "encoder.token_residual=words"],
    # one query-aware token (the attended edge's object word): is one token enough once it is the right one?
    "query_llm_words_k1": ["encoder.pooling=query", "encoder.num_graph_tokens=1", "encoder.features=llm",
                           "encoder.token_residual=words"],
}
DEFAULT_DESIGNS = ["mean_pool", "mean_pool_llm", "query_sentence", "query_llm_words"]
MAX_NEW_TOKENS = 6  # "Answer: <value>" and the end of turn, or a short sentence naming it
SPLIT_NAMES = {"train": "train", "dev": "val", "test": "test"}  # control split -> prepared split


def run(cmd: list[str]) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True)


def cached_encoder(embedder: Any):
    """The embedder's encode with a per-text cache (names repeat across graphs)."""
    import numpy as np

    cache: dict[str, Any] = {}

    def encode(texts: list[str]):
        missing = [t for t in dict.fromkeys(texts) if t not in cache]
        if missing:
            cache.update(zip(missing, embedder.encode(missing)))
        return np.stack([cache[t] for t in texts]) if texts else np.zeros((0, embedder.dim), np.float32)

    return encode


def prepare(cfg: Any, data_dir: Path) -> dict[str, list[Any]]:
    """The control's examples (regenerated: deterministic) and, once, their prepared set for train.py."""
    from qgmem.embed import get_embedder
    from qgmem.graph.local_graph import GraphConfig, feature_dims
    from qgmem.training.graph_control import generate, training_form
    from qgmem.training.prepared import example_record, save_prepared

    embedder = get_embedder()
    data = generate(cfg, cached_encoder(embedder), embedder.dim)
    config = {"dataset": "graph-control", "control": dataclasses.asdict(cfg), "embedder": embedder.name,
              "graph": dataclasses.asdict(GraphConfig(max_edges=cfg.max_edges)), "retrieval": {}}
    meta = data_dir / "prepare_meta.json"
    if meta.exists() and json.loads(meta.read_text()).get("config") == config:
        return data
    rows: dict[str, list[dict[str, Any]]] = {}
    for split, exs in data.items():
        forms = training_form(exs, cfg, split) if split != "test" else [ex.graph_only for ex in exs]
        rows[SPLIT_NAMES[split]] = [example_record(ex.question, ex.memory, f, SPLIT_NAMES[split])
                                    for ex, f in zip(exs, forms)]
    data_dir.mkdir(parents=True, exist_ok=True)
    save_prepared(rows, data_dir, config, *feature_dims(GraphConfig(max_edges=cfg.max_edges), embedder.dim))
    return data


def score_design(ckpt: Path, data: dict[str, list[Any]], known: dict[str, Any], seed: int, batch: int,
                 max_length: int, system: str) -> dict[str, Any]:
    """Exact match of one design's best checkpoint on dev (graph only, shuffled) and test (every condition)."""
    from qgmem.model.graph_token_lm import GraphTokenLM
    from qgmem.training.control_eval import GRAPH_ONLY, comparisons, score_conditions, token_diagnostics

    model = GraphTokenLM.from_pretrained(ckpt, device="cpu").eval()
    col = model.make_collator(max_length, system=system)
    t0 = time.perf_counter()
    dev = score_conditions(model, data["dev"], col, seed=seed, batch_size=batch, max_new_tokens=MAX_NEW_TOKENS,
                           names=GRAPH_ONLY[:2])
    test = score_conditions(model, data["test"], col, seed=seed, batch_size=batch, max_new_tokens=MAX_NEW_TOKENS,
                            known=known)
    out = {"dev": dev, "test": test, "dev_differences": comparisons(dev, seed),
           "test_differences": comparisons(test, seed),
           "test_named_differences": comparisons(test, seed, "named_per_example"),
           "tokens": token_diagnostics(model, data["test"], col),
           "score_seconds": round(time.perf_counter() - t0, 1)}
    del model
    return out


def em_table(results: dict[str, dict[str, Any]], metric: str = "em") -> str:
    """Designs x conditions on test (`metric`: "em" exact match, "named" names the answer), with the paired
    differences; the dev column (exact match) is what the design is chosen by."""
    from qgmem.training.control_eval import CONDITIONS, COMPARISONS
    from qgmem.training.validate import format_ci

    diffs_key = "test_differences" if metric == "em" else "test_named_differences"
    lines = ["| design | dev: graph only - shuffled | " + " | ".join(CONDITIONS) + " | "
             + " | ".join(f"{a} - {b} [95% CI]" for a, b in COMPARISONS) + " |",
             "|---|---|" + "---:|" * len(CONDITIONS) + "---|" * len(COMPARISONS)]
    for name, r in results.items():
        dev = format_ci(r["dev_differences"].get("graph only - shuffled graph only"))
        ems = " | ".join(f"{r['test'][c][metric]:.3f}" for c in CONDITIONS)
        diffs = " | ".join(format_ci(r[diffs_key].get(f"{a} - {b}")) for a, b in COMPARISONS)
        lines.append(f"| {name} | {dev} | {ems} | {diffs} |")
    return "\n".join(lines)


def token_table(results: dict[str, dict[str, Any]]) -> str:
    lines = ["| design | token norm | spread across test questions | spread / norm | a token's nearest word = "
             "answer | nearest vocabulary tokens of the first test question's tokens |",
             "|---|---:|---:|---:|---:|---|"]
    for name, r in results.items():
        t = r["tokens"]
        first = t["examples"][0]
        near = "; ".join(", ".join(f"{w!r} {s:.2f}" for w, s in tok) for tok in first["nearest"])
        lines.append(f"| {name} | {t['token_norm']:.2f} | {t['spread']:.3f} | {t['spread_over_norm']:.3f} | "
                     f"{t['nearest_is_answer']:.3f} | {near} |")
    first = next(iter(results.values()))["tokens"]
    q = first["examples"][0]
    return "\n".join(lines) + (f"\n\n(first test question: {q['question']!r}, answer {q['answer']!r}; the LLM's input "
                               f"embeddings have mean norm {first['llm_embedding_norm']:.2f})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--designs", nargs="+", default=DEFAULT_DESIGNS, choices=list(DESIGNS))
    ap.add_argument("--config", default=CONFIG)
    ap.add_argument("--out", default="checkpoints/graph_control", help="one folder per design + summary")
    ap.add_argument("--seed", type=int, default=0, help="the control task's seed")
    ap.add_argument("--conversations", nargs=3, type=int, metavar=("TRAIN", "DEV", "TEST"),
                    help="conversations per split (default: ControlConfig's)")
    ap.add_argument("overrides", nargs="*", help="key=value overrides of the train config, for every design")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from qgmem.training.config import load_train_config
    from qgmem.training.control_eval import NO_TOKEN, without_replies
    from qgmem.training.graph_control import ControlConfig

    base = load_train_config(str(ROOT / args.config), None, args.overrides)
    cfg = ControlConfig(seed=args.seed)
    if args.conversations:
        cfg = dataclasses.replace(cfg, conversations=dict(zip(("train", "dev", "test"), args.conversations)))
    t0 = time.perf_counter()
    data = prepare(cfg, ROOT / base.data.dir)
    print(f"control: {', '.join(f'{s} {len(v)}' for s, v in data.items())} questions "
          f"({time.perf_counter() - t0:.0f} s)", flush=True)
    out = ROOT / args.out
    results: dict[str, dict[str, Any]] = {}
    known: dict[str, Any] = {}
    for name in args.designs:
        report = out / name / "report.json"
        if not report.exists():
            run([sys.executable, "train.py", "--config", args.config, f"output_dir={out / name}",
                 *DESIGNS[name], *args.overrides])
        rep = json.loads(report.read_text())
        scores = out / name / "control_scores.json"  # a rerun (e.g. with one more design) reuses the scoring
        key = {"control": dataclasses.asdict(cfg), "max_new_tokens": MAX_NEW_TOKENS, "system": base.data.system}
        cached = json.loads(scores.read_text()) if scores.exists() else {}
        if cached.get("key") == key:
            r = cached["scores"]
        else:
            r = score_design(out / name / "best", data, known, cfg.seed, base.optim.eval_batch_size,
                             base.data.max_length, base.data.system)
            scores.write_text(json.dumps({"key": key, "scores": r}))
        known = {c: r["test"][c] for c in NO_TOKEN}  # no graph token: the same for every design
        r.update(steps=rep["steps"], train_seconds=rep["train_seconds"], best=rep["best"],
                 parameters=rep["parameters"], overrides=DESIGNS[name])
        results[name] = r
        print(f"{name}: test graph only {r['test']['graph only']['em']:.3f}, shuffled "
              f"{r['test']['shuffled graph only']['em']:.3f}, graph + text {r['test']['graph + text']['em']:.3f} "
              f"(train {rep['train_seconds']:.0f} s, scoring {r['score_seconds']:.0f} s)", flush=True)
    best = max(results, key=lambda n: results[n]["dev_differences"]["graph only - shuffled graph only"]["mean"])
    head = (f"control: {', '.join(f'{s} {len(v)}' for s, v in data.items())} questions; per design: "
            + ", ".join(f"{n} {r['steps']} steps, {r['train_seconds']:.0f} s" for n, r in results.items())
            + f"; chosen on dev: {best}")
    table = (head + "\n\nExact match (test):\n\n" + em_table(results)
             + "\n\nNames the answer (test; the reply names the "
             "current state and not the old one, in any format):\n\n" + em_table(results, "named") + "\n\n"
             + token_table(results))
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(
        {"control": dataclasses.asdict(cfg), "chosen_on_dev": best,
         "designs": {n: {**r, "dev": without_replies(r["dev"]), "test": without_replies(r["test"])}
                     for n, r in results.items()}}, indent=1))
    (out / "summary.md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
