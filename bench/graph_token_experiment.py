"""Does the graph token carry the question's graph? The controlled CPU experiment, one command.

Prepares LongMemEval-S memories chosen without the answer key (once), then trains each encoder
design against frozen SmolLM2-135M-Instruct with the same data, steps, seed and sequence length,
and scores its best checkpoint on the held-out test split under five conditions: the question's own
graph + memory text, another question's graph + text, text only, graph only, shuffled graph only
(`qgmem.training.validate`), with paired bootstrap 95% intervals. A killed run resumes: a finished
design (``report.json``) is skipped, an unfinished one resumes from its ``last/`` checkpoint.

    python bench/graph_token_experiment.py [--designs mean_pool edge_tokens ...] [key=value ...]

Writes ``<out>/summary.json`` and ``<out>/summary.md`` (the table quoted in bench/RESULTS.md).
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
}


def run(cmd: list[str]) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True)


def summary_table(reports: dict[str, dict]) -> str:
    """Designs x conditions: answer loss, token F1, differences to graph+text with their intervals."""
    from qgmem.training.validate import CONDITIONS, _ci

    lines = ["| design | condition | answer loss | token F1 | loss - loss(graph+text) [95% CI] | "
             "F1(graph+text) - F1 [95% CI] |", "|---|---|---:|---:|---|---|"]
    for name, rep in reports.items():
        t = rep["test"]
        for cond in CONDITIONS:
            r, d = t[cond], t["differences"].get(cond, {})
            lines.append(f"| {name} | {cond} | {r['loss']:.4f} | {r.get('f1', float('nan')):.4f} | "
                         f"{_ci(d.get('loss'))} | {_ci(d.get('f1'))} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--designs", nargs="+", default=list(DESIGNS), choices=list(DESIGNS))
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
    steps = ", ".join(f"{n} {r['steps']} ({r['train_seconds']:.0f} s)" for n, r in reports.items())
    head = (f"test split: n = {first['test']['n']}; memory: {first.get('memory', {}).get('test', '?')}; "
            f"optimizer steps (training seconds): {steps}")
    table = head + "\n\n" + summary_table(reports)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps({n: {"config_overrides": DESIGNS[n], "steps": r["steps"],
                                                      "train_seconds": r["train_seconds"], "best": r["best"],
                                                      "test": r["test"]} for n, r in reports.items()}, indent=1))
    (out / "summary.md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
