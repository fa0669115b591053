"""The library a user calls scores what the benchmark reports: `MemoryPipeline` (its default
`RetrievalConfig()`) against the `qgmem-activation` rows of a finished retrieval run of
configs/eval/locomo_retrieval_cpu.yaml, on the same store and the same questions.

Run: python bench/pipeline_parity.py --run results/locomo/<run> [--store stores/locomo_rule]
Prints both Recall@10 and nDCG@10 (to 3 decimals) and the questions whose working memory differs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qgmem.evaluation import retrieval_metrics as rm  # noqa: E402
from qgmem.evaluation.retrieval import load_retrieval_config  # noqa: E402
from qgmem.evaluation.runs import question_key  # noqa: E402
from qgmem.evaluation.subset import load_benchmark, select  # noqa: E402
from qgmem.io import read_jsonl  # noqa: E402
from qgmem.llm.scripted import ScriptedBackend  # noqa: E402
from qgmem.pipeline import MemoryPipeline  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="a finished run of configs/eval/locomo_retrieval_cpu.yaml")
    ap.add_argument("--store", default=None, help="the store the run used (default: its config's store_dir)")
    args = ap.parse_args(argv)
    run = Path(args.run)
    cfg = load_retrieval_config(run / "config.yaml")
    rows = {r["qid"]: r for r in read_jsonl(run / "retrieval.jsonl")
            if r["method"] == "qgmem-activation" and r["scores"] is not None}
    pipe = MemoryPipeline(llm=ScriptedBackend([]), store_dir=args.store or cfg.store_dir)
    k = cfg.k
    got = {"recall": [], "ndcg": []}
    want = {"recall": [], "ndcg": []}
    differ = []
    for conv, qs in tqdm(select(load_benchmark(cfg), cfg.subset), unit="conv"):
        pipe.add(conv)  # stored: nothing is extracted again
        for q in qs:
            row = rows.get(question_key(conv.id, q.id))
            if row is None or not q.evidence:
                continue
            items = [it.turn_ids for it in pipe.working_memory(q, conv.id).items]
            got["recall"].append(rm.recall_at_k(items, q.evidence, k))
            got["ndcg"].append(rm.ndcg_at_k(items, q.evidence, k))
            want["recall"].append(row["scores"]["recall"])
            want["ndcg"].append(row["scores"]["ndcg"])
            if items != row.get("items", items):
                differ.append(f"{conv.id}/{q.id}")
    out = {m: {"pipeline": round(rm.mean(got[m]), 3), "benchmark run": round(rm.mean(want[m]), 3)} for m in got}
    out["questions"] = len(got["recall"])
    out["working memories that differ"] = len(differ)
    print(json.dumps(out, indent=1))
    if differ:
        print("differ:", ", ".join(differ[:20]))
    pipe.close()
    return 0 if all(out[m]["pipeline"] == out[m]["benchmark run"] for m in got) else 1


if __name__ == "__main__":
    raise SystemExit(main())
