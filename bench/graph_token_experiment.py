"""Does the graph token carry the question's graph? The controlled CPU experiment, one command.

Prepares LongMemEval-S memories chosen without the answer key (once), then trains each encoder
design against frozen SmolLM2-135M-Instruct with the same data, steps, seed and sequence length,
and scores its best checkpoint on the held-out test split under five conditions: the question's own
graph + memory text, another question's graph + text, text only, graph only, shuffled graph only
(`qgmem.training.validate`), with paired bootstrap 95% intervals. A killed run resumes: a finished
design (``report.json``) is skipped, an unfinished one resumes from its ``last/`` checkpoint.

    python bench/graph_token_experiment.py [--designs mean_pool edge_tokens ...] [key=value ...]

Writes ``<out>/summary.json`` and ``<out>/summary.md`` (the tables quoted in bench/RESULTS.md): per design and
condition, loss, F1 and intervals; per design, the norm of its graph tokens and their spread across questions.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = "configs/train/smollm2_graph_experiment.yaml"
# design -> overrides of the train config; "mean_pool" is the paper's single mean-pooled token
DESIGNS: dict[str, list[str]] = {
    "mean_pool": [],
    "mean_pool_scaled": ["encoder.token_scale=embedding"],
    "edge_tokens": ["encoder.pooling=edges", "encoder.num_graph_tokens=10"],
    "edge_tokens_scaled": ["encoder.pooling=edges", "encoder.num_graph_tokens=10", "encoder.token_scale=embedding"],
    # half of the training examples without memory text: the token must carry the graph to lower their loss
    "edge_tokens_text_dropout": ["encoder.pooling=edges", "encoder.num_graph_tokens=10", "data.text_dropout=0.5"],
    # the design that passes the positive control (bench/graph_control.py, bench/RESULTS.md)
    "query_llm_words": ["encoder.pooling=query", "encoder.num_graph_tokens=3", "encoder.features=llm",
                        "encoder.token_residual=words"],
}


def run(cmd: list[str]) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True)


def summary_table(reports: dict[str, dict]) -> str:
    """Designs x conditions: answer loss, token F1, differences to graph+text with their intervals."""
    from qgmem.training.validate import CONDITIONS, format_ci

    lines = ["| design | condition | answer loss | token F1 | loss - loss(graph+text) [95% CI] | "
             "F1(graph+text) - F1 [95% CI] |", "|---|---|---:|---:|---|---|"]
    for name, rep in reports.items():
        t = rep["test"]
        for cond in CONDITIONS:
            r, d = t[cond], t["differences"].get(cond, {})
            lines.append(f"| {name} | {cond} | {r['loss']:.4f} | {r.get('f1', float('nan')):.4f} | "
                         f"{format_ci(d.get('loss'))} | {format_ci(d.get('f1'))} |")
    return "\n".join(lines)


def token_spread(checkpoint: Path, data_dir: Path) -> dict[str, float]:
    """Norm of a design's graph tokens over the test graphs and their spread across questions (root-mean-square
    distance from the mean token): a spread near 0 means the token is one fixed prompt for every question."""
    import torch
    from qgmem.model.graph_token_lm import GraphTokenLM
    from qgmem.training.examples import ExampleDataset
    from qgmem.training.prepared import load_prepared

    meta, splits = load_prepared(data_dir)
    test = ExampleDataset(splits["test"], meta["node_dim"], meta["edge_dim"])
    model = GraphTokenLM.from_pretrained(checkpoint).eval()
    # through the collator and `graph_tokens`, so that query-pooling designs read each graph's question
    collate = model.make_collator(int(model.extra.get("max_length") or 2048), system=model.extra.get("system"))
    # the examples training scored: one whose question + answer alone exceed max_length is left out there too
    batch = collate([ex for ex in (test[i] for i in range(len(test))) if collate.fits(ex)])
    with torch.no_grad():
        tokens = model.graph_tokens(batch).float()
    spread = float((tokens - tokens.mean(0, keepdim=True)).norm(dim=-1).pow(2).mean().sqrt())
    norm = float(tokens.norm(dim=-1).mean())
    return {"token_norm": norm, "spread": spread, "spread_over_norm": spread / norm,
            "llm_embedding_norm": float(model.llm.get_input_embeddings().weight.norm(dim=-1).mean())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--designs", nargs="+", default=[d for d in DESIGNS if d != "query_llm_words"],
                    choices=list(DESIGNS))
    ap.add_argument("--config", default=CONFIG)
    ap.add_argument("--out", default="checkpoints/graph_experiment", help="one folder per design + summary")
    ap.add_argument("overrides", nargs="*", help="key=value overrides of the train config, for every design")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from qgmem.training.config import load_train_config

    data_dir = ROOT / load_train_config(str(ROOT / args.config), None, args.overrides).data.dir
    meta = data_dir / "prepare_meta.json"
    if not (meta.exists() and json.loads(meta.read_text()).get("complete")):
        run([sys.executable, "-m", "qgmem.cli", "prepare", "--config", args.config, "--out", str(data_dir)])
    out = ROOT / args.out
    reports: dict[str, dict] = {}
    for name in args.designs:
        report = out / name / "report.json"
        if not report.exists():
            run([sys.executable, "train.py", "--config", args.config, f"output_dir={out / name}",
                 *DESIGNS[name], *args.overrides])
        reports[name] = json.loads(report.read_text())
    first = next(iter(reports.values()))
    runs = ", ".join(f"{n} {r['steps']} steps, {r['train_seconds']:.0f} s, test n = {r['test']['n']}"
                     for n, r in reports.items())
    head = f"memory of the test split: {first.get('memory', {}).get('test', '?')}; per design: {runs}"
    spreads = {n: token_spread(out / n / "best", data_dir) for n in reports}
    table = head + "\n\n" + summary_table(reports) + "\n\n" + "\n".join(
        ["| design | token norm | spread across test questions | spread / norm |", "|---|---:|---:|---:|"]
        + [f"| {n} | {r['token_norm']:.2f} | {r['spread']:.3f} | {r['spread_over_norm']:.3f} |" for n, r in spreads.items()]
        + [f"\n(the LLM's input embeddings have mean norm {next(iter(spreads.values()))['llm_embedding_norm']:.2f})"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps({n: {"config_overrides": DESIGNS[n], "steps": r["steps"],
                                                      "train_seconds": r["train_seconds"], "best": r["best"],
                                                      "test": r["test"], "tokens": spreads[n]}
                                                  for n, r in reports.items()}, indent=1))
    (out / "summary.md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
