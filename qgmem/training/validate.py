"""Scoring during and after training: answer loss, generation token F1, and the test report under
three conditions (graph token + text, text only, shuffled graphs).

Token F1 is SQuAD-style (`qgmem.evaluation.metrics.squad_f1`, max over gold answers).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qgmem.training.checkpoint import load_best_weights
from qgmem.training.examples import shuffled_graphs

F1_DEFINITION = "SQuAD-style token F1 (qgmem.evaluation.metrics.squad_f1), max over gold answers"
CONDITIONS = ("graph+text", "text only", "shuffled graph+text")


def _to_device(batch: dict[str, Any], device: Any) -> dict[str, Any]:
    return {k: (v.to(device) if hasattr(v, "to") else v) for k, v in batch.items()}


def eval_loss(model: Any, examples: list[Any], collator: Any, accelerator: Any, batch_size: int) -> dict[str, float]:
    """Answer loss = mean NLL per answer token over `examples` (all processes; summed, then divided)."""
    import torch

    m = accelerator.unwrap_model(model)
    was = m.training
    m.eval()
    shard = examples[accelerator.process_index::accelerator.num_processes]
    tot = torch.zeros(2, dtype=torch.float64, device=accelerator.device)
    with torch.no_grad():
        for i in range(0, len(shard), batch_size):
            batch = _to_device(collator(shard[i:i + batch_size]), accelerator.device)
            with accelerator.autocast():
                out = m(batch)
            tot[0] += float(out.loss_sum)
            tot[1] += int(out.num_tokens)
    tot = accelerator.reduce(tot, reduction="sum")
    m.train(was)
    return {"loss": float(tot[0] / tot[1]) if tot[1] > 0 else float("nan"), "tokens": int(tot[1])}


def eval_generate(model: Any, examples: list[Any], golds: list[list[str]], collator: Any, accelerator: Any,
                  batch_size: int, max_new_tokens: int) -> dict[str, Any]:
    """Greedy answers for `examples`; token F1 (SQuAD-style) against `golds`, over all processes."""
    import torch
    from accelerate.utils import gather_object

    from qgmem.answer import parse_answer
    from qgmem.evaluation.metrics import squad_f1

    m = accelerator.unwrap_model(model)
    was = m.training
    m.eval()
    gen = collator.for_generation()
    idx = list(range(len(examples)))[accelerator.process_index::accelerator.num_processes]
    local: list[tuple[int, str, float]] = []
    with torch.no_grad():
        for i in range(0, len(idx), batch_size):
            part = idx[i:i + batch_size]
            batch = _to_device(gen([examples[j] for j in part]), accelerator.device)
            texts = m.generate(batch, max_new_tokens=max_new_tokens)
            for j, t in zip(part, texts):
                local.append((j, t, squad_f1(parse_answer(t)[0], golds[j])))
    allr = sorted(gather_object(local) if accelerator.num_processes > 1 else local)
    m.train(was)
    f1 = sum(r[2] for r in allr) / len(allr) if allr else float("nan")
    return {"f1": f1, "n": len(allr), "samples": [{"i": r[0], "output": r[1], "f1": r[2]} for r in allr[:5]]}


def test_report(model: Any, accelerator: Any, examples: list[Any], golds: list[list[str]], collator: Any,
                out: Path, *, batch_size: int, max_new_tokens: int, gen_examples: int | None, seed: int
                ) -> dict[str, Any]:
    """The best checkpoint (``out/best``) on the test split: graph token + text, text only, shuffled graphs."""
    m = accelerator.unwrap_model(model)
    load_best_weights(m, out)  # the trainable weights of the best validation step
    n_gen = len(examples) if gen_examples is None else min(gen_examples, len(examples))
    conditions = {"graph+text": (True, examples), "text only": (False, examples),
                  "shuffled graph+text": (True, shuffled_graphs(examples, seed))}
    res: dict[str, Any] = {"n": len(examples), "n_generated": n_gen}
    for name, (use_graph, exs) in conditions.items():
        m.use_graph = use_graph
        r = {"loss": eval_loss(model, exs, collator, accelerator, batch_size)["loss"]}
        if n_gen:
            g = eval_generate(model, exs[:n_gen], golds[:n_gen], collator, accelerator, batch_size, max_new_tokens)
            r["f1"], r["samples"] = g["f1"], g["samples"]
        res[name] = r
    m.use_graph = True
    return res


def fmt(rec: dict[str, Any]) -> str:
    return " | ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in rec.items() if k != "step")


def report_table(report: dict[str, Any]) -> str:
    """The run's report as a short text + Markdown table (report.md)."""
    lines = [f"steps {report['steps']} | train {report['train_seconds']} s | trainable params "
             f"{report['parameters']['trainable']:,} | frozen {report['parameters']['frozen']:,}"
             + (f" | resumed at steps {report['resumed_from']}" if report.get("resumed_from") else "")]
    if report.get("best"):
        lines.append(f"best validation: {fmt(report['best'])} (step {report['best']['step']})")
    t = report.get("test")
    if t:
        lines += ["", f"test split, n = {t['n']} (F1 on {t['n_generated']}; {report['f1_definition']})", "",
                  "| condition | answer loss | token F1 |", "|---|---:|---:|"]
        for name in CONDITIONS:
            r = t[name]
            f1 = f"{r['f1']:.4f}" if "f1" in r else "-"
            lines.append(f"| {name} | {r['loss']:.4f} | {f1} |")
    return "\n".join(lines)
