"""Every chosen default of `RetrievalConfig`, measured on the dev splits only, one field at a time.

For each field the default's value and its alternatives run the benchmark harness (the same code as
`evaluate.py`) on LoCoMo's dev conversations (conv-26, conv-30) and on the LongMemEval-S dev questions
(the `dev_conversations` of configs/eval/longmemeval_s_retrieval_cpu.yaml, under the config's protocol);
the score is the mean of LoCoMo Recall@10 and LongMemEval-S turn recall_all@10. A default is kept when no
alternative beats it by more than `--margin`; the table says which value the dev splits prefer. The test
side is never read here.

Run: python bench/dev_defaults.py [--fields channels,rrf_k] [--benchmarks locomo,longmemeval-s]
Writes results/dev_defaults/table.md and summary.json; each variant is a run under results/<benchmark>/dev_*.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qgmem.config import load_config  # noqa: E402
from qgmem.evaluation.config import RetrievalBenchConfig  # noqa: E402
from qgmem.evaluation.retrieval import load_benchmark, run_benchmark  # noqa: E402
from qgmem.io import atomic_write_json, atomic_write_text  # noqa: E402
from qgmem.retrieve.config import DEV_WEIGHTS, RetrievalConfig  # noqa: E402

CONFIGS = {"locomo": "configs/eval/locomo_retrieval_cpu.yaml",
           "longmemeval-s": "configs/eval/longmemeval_s_retrieval_cpu.yaml"}
METRIC = {"locomo": "recall", "longmemeval-s": "official_turn_recall_all@10"}  # headline turn recall at k=10

UNIT = ["lexical", "dense", "attribute"]
TURNS = ["turn-lexical", "turn-dense"]
# field -> alternatives to the default (the default itself is always run)
ALTERNATIVES: dict[str, list[Any]] = {
    "channels": [UNIT + TURNS, ["lexical", "dense"]],
    "rrf_k": [15, 60],
    "channel_weights": [{**DEV_WEIGHTS, "lexical": 1.0}, {**DEV_WEIGHTS, "lexical": 2.0},
                        {**DEV_WEIGHTS, "attribute": 1.0}],
    "context_turns": [0, 1, 3],
    "context_chars": [0, 150],
    "index_source": [False],
    "dense_source": [True],
    "use_traces": [False],
    "state_order": [False],
    "embedder": ["minilm:auto"],
}


def _label(value: Any) -> str:
    if isinstance(value, dict):
        default = RetrievalConfig().channel_weights
        return ",".join(f"{k}={v}" for k, v in value.items() if default.get(k) != v) or "default"
    if isinstance(value, list):
        return "+".join(value)
    return str(value)


def _run(benchmark: str, field: str, value: Any, convs: list, dev: list[str], store_suffix: str) -> float:
    name = f"dev_{field}_{_label(value)}".replace("+", "_").replace(",", "_").replace("=", "")
    cfg = load_config(RetrievalBenchConfig, ROOT / CONFIGS[benchmark],
                      [f"run_name={name}", "methods=[qgmem-activation]", "workers=1", "dev_conversations=[]",
                       f"subset.conversations={json.dumps(dev)}"])
    cfg.store_dir += store_suffix
    setattr(cfg.retrieval, field, value)
    summary = run_benchmark(cfg, conversations=convs, resume=True)
    return float(summary["groups"]["overall"]["qgmem-activation"][METRIC[benchmark]])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fields", default=",".join(ALTERNATIVES), help="comma-separated RetrievalConfig fields")
    ap.add_argument("--benchmarks", default="locomo,longmemeval-s")
    ap.add_argument("--margin", type=float, default=0.005, help="gain an alternative needs to replace a default")
    ap.add_argument("--out", default="results/dev_defaults")
    ap.add_argument("--store-suffix", default="", help="use <config store_dir><suffix> (e.g. a copy of the store)")
    args = ap.parse_args(argv)
    fields = [f for f in args.fields.split(",") if f]
    benches = [b for b in args.benchmarks.split(",") if b]
    unknown = [f for f in fields if f not in ALTERNATIVES]
    if unknown:
        ap.error(f"--fields: unknown {unknown}; known: {list(ALTERNATIVES)}")
    data: dict[str, tuple[list, list[str]]] = {}
    for b in benches:
        cfg = load_config(RetrievalBenchConfig, ROOT / CONFIGS[b])
        dev = list(cfg.dev_conversations)
        convs = [c for c in load_benchmark(cfg) if c.id in set(dev)]
        data[b] = (convs, dev)
    default = RetrievalConfig()
    rows, out = [], {}
    for field in fields:
        results = []
        for value in [getattr(default, field), *ALTERNATIVES[field]]:
            scores = {b: _run(b, field, value, *data[b], args.store_suffix) for b in benches}
            results.append((value, scores, sum(scores.values()) / len(scores)))
        base = results[0][2]
        best = max(results, key=lambda r: r[2])
        keep = best[2] <= base + args.margin
        out[field] = {"default": _label(results[0][0]), "dev_prefers": _label(results[0][0] if keep else best[0]),
                      "variants": [{"value": _label(v), **s, "mean": m} for v, s, m in results]}
        for i, (v, s, m) in enumerate(results):
            mark = "default" if i == 0 else ("**dev prefers**" if (not keep and v is best[0]) else "")
            rows.append(f"| {field if i == 0 else ''} | {_label(v)} | " + " | ".join(f"{s[b]:.3f}" for b in benches)
                        + f" | {m:.3f} | {mark} |")
        print(rows[-len(results):], flush=True)
    head = ("| field | value | " + " | ".join(f"{b} dev {METRIC[b]}" for b in benches) + " | mean | |\n|---|---|"
            + "---|" * len(benches) + "---|---|")
    table = head + "\n" + "\n".join(rows) + "\n"
    Path(args.out).mkdir(parents=True, exist_ok=True)
    atomic_write_text(Path(args.out) / "table.md", table)
    atomic_write_json(Path(args.out) / "summary.json", out)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
