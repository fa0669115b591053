"""Scoring during and after training: answer loss, generation token F1, and the test report.

The test report asks whether the graph token carries the question's graph: the best checkpoint is
scored with its own graph + memory text, another question's graph + text (a seeded derangement,
`shuffled_graphs`), text only, the graph only (no memory text) and a shuffled graph only. Every
condition is scored on the same examples, so each difference to "graph+text" comes with a paired
bootstrap 95% interval over examples (per-example mean answer NLL; token F1).

Token F1 is SQuAD-style (`qgmem.evaluation.metrics.squad_f1`, max over gold answers).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from qgmem.training.checkpoint import load_best_weights
from qgmem.training.examples import shuffled_graphs

F1_DEFINITION = "SQuAD-style token F1 (qgmem.evaluation.metrics.squad_f1), max over gold answers"
REFERENCE = "graph+text"
CONDITIONS = (REFERENCE, "shuffled graph+text", "text only", "graph only", "shuffled graph only")


def _to_device(batch: dict[str, Any], device: Any) -> dict[str, Any]:
    return {k: (v.to(device) if hasattr(v, "to") else v) for k, v in batch.items()}


def _per_example(model: Any, accelerator: Any, n: int, batch_size: int, score: Any) -> list[Any]:
    """``score(m, indices)`` -> one record per index, over the examples ``0..n-1`` split across processes,
    in eval mode without gradients; the records of every process, in example order."""
    import torch
    from accelerate.utils import gather_object

    m = accelerator.unwrap_model(model)
    was = m.training
    m.eval()
    idx = list(range(n))[accelerator.process_index::accelerator.num_processes]
    local: list[tuple[int, Any]] = []
    with torch.no_grad():
        for i in range(0, len(idx), batch_size):
            part = idx[i:i + batch_size]
            local += list(zip(part, score(m, part)))
    allr = sorted(gather_object(local) if accelerator.num_processes > 1 else local, key=lambda r: r[0])
    m.train(was)
    return [r for _, r in allr]


def example_losses(model: Any, examples: list[Any], collator: Any, accelerator: Any, batch_size: int
                   ) -> list[tuple[float, int]]:
    """(answer NLL summed, answer tokens) of every example, in the order given (all processes)."""

    def score(m: Any, part: list[int]) -> list[tuple[float, int]]:
        batch = _to_device(collator([examples[j] for j in part]), accelerator.device)
        with accelerator.autocast():
            out = m(batch)
        return [(float(ls), int(n)) for ls, n in zip(out.row_loss_sum, out.row_tokens)]

    return _per_example(model, accelerator, len(examples), batch_size, score)


def eval_loss(model: Any, examples: list[Any], collator: Any, accelerator: Any, batch_size: int) -> dict[str, float]:
    """Answer loss = mean NLL per answer token over `examples` (all processes; summed, then divided)."""
    losses = example_losses(model, examples, collator, accelerator, batch_size)
    return {"loss": token_mean(losses), "tokens": sum(n for _, n in losses)}


def token_mean(losses: list[tuple[float, int]]) -> float:
    """Mean NLL per answer token of (NLL sum, tokens) pairs: every token weighs the same, whatever the example."""
    tokens = sum(n for _, n in losses)
    return sum(ls for ls, _ in losses) / tokens if tokens else float("nan")


def eval_generate(model: Any, examples: list[Any], golds: list[list[str]], collator: Any, accelerator: Any,
                  batch_size: int, max_new_tokens: int) -> dict[str, Any]:
    """Greedy answers for `examples`; token F1 (SQuAD-style) against `golds`, over all processes."""
    from qgmem.answer import parse_answer
    from qgmem.evaluation.metrics import squad_f1

    gen = collator.for_generation()

    def score(m: Any, part: list[int]) -> list[tuple[str, float]]:
        texts = m.generate(_to_device(gen([examples[j] for j in part]), accelerator.device),
                           max_new_tokens=max_new_tokens)
        return [(t, squad_f1(parse_answer(t)[0], golds[j])) for j, t in zip(part, texts)]

    res = _per_example(model, accelerator, len(examples), batch_size, score)
    f1 = sum(r[1] for r in res) / len(res) if res else float("nan")
    return {"f1": f1, "n": len(res), "samples": [{"i": i, "output": t, "f1": f} for i, (t, f) in enumerate(res[:5])],
            "per_example": [r[1] for r in res]}


def condition_examples(examples: list[Any], seed: int) -> dict[str, tuple[bool, list[Any]]]:
    """Condition name -> (use the graph token, examples) for every test condition."""
    shuffled = shuffled_graphs(examples, seed)
    return {"graph+text": (True, examples), "shuffled graph+text": (True, shuffled), "text only": (False, examples),
            "graph only": (True, [dataclasses.replace(ex, memory_text="") for ex in examples]),
            "shuffled graph only": (True, [dataclasses.replace(ex, memory_text="") for ex in shuffled])}


def paired_differences(res: dict[str, Any], seed: int) -> dict[str, Any]:
    """Per condition, loss(condition) - loss(graph+text) and F1(graph+text) - F1(condition), each with a
    paired bootstrap 95% interval over examples (positive = the question's own graph + text is better)."""
    from qgmem.evaluation.bootstrap import bootstrap_ci

    ref = res[REFERENCE]
    out: dict[str, Any] = {}
    for name in CONDITIONS[1:]:
        r = res[name]
        d = {"loss": bootstrap_ci([a - b for a, b in zip(r["example_loss"], ref["example_loss"])], seed=seed).as_dict()}
        if "example_f1" in r and "example_f1" in ref:
            d["f1"] = bootstrap_ci([b - a for a, b in zip(r["example_f1"], ref["example_f1"])], seed=seed).as_dict()
        out[name] = d
    return out


def test_report(model: Any, accelerator: Any, examples: list[Any], golds: list[list[str]], collator: Any,
                out: Path, *, batch_size: int, max_new_tokens: int, gen_examples: int | None, seed: int
                ) -> dict[str, Any]:
    """The best checkpoint (``out/best``) on the test split under every condition of `CONDITIONS`,
    with per-example losses and F1 and the paired differences to graph+text."""
    m = accelerator.unwrap_model(model)
    load_best_weights(m, out, accelerator)  # the weights of the best validation step (the same on every process)
    n_gen = len(examples) if gen_examples is None else min(gen_examples, len(examples))
    res: dict[str, Any] = {"n": len(examples), "n_generated": n_gen}
    for name, (use_graph, exs) in condition_examples(examples, seed).items():
        m.use_graph = use_graph
        losses = example_losses(model, exs, collator, accelerator, batch_size)
        r = {"loss": token_mean(losses), "example_loss": [ls / max(n, 1) for ls, n in losses]}
        if n_gen:
            g = eval_generate(model, exs[:n_gen], golds[:n_gen], collator, accelerator, batch_size, max_new_tokens)
            r["f1"], r["samples"], r["example_f1"] = g["f1"], g["samples"], g["per_example"]
        res[name] = r
    m.use_graph = True
    res["differences"] = paired_differences(res, seed)
    return res


def fmt(rec: dict[str, Any]) -> str:
    return " | ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in rec.items() if k != "step")


def report_table(report: dict[str, Any]) -> str:
    """The run's report as a short text + Markdown table (report.md)."""
    lines = [f"steps {report['steps']} | train {report['train_seconds']} s | trainable params "
             f"{report['parameters']['trainable']:,} | frozen {report['parameters']['frozen']:,}"
             + (f" | resumed at steps {report['resumed_from']}" if report.get("resumed_from") else "")]
    left_out = {k: len(v) for k, v in (report.get("left_out_too_long") or {}).items() if v}
    if left_out:
        lines.append("left out (question + answer longer than max_length without memory text): "
                     + ", ".join(f"{k} {n}" for k, n in left_out.items()))
    if report.get("best"):
        lines.append(f"best validation: {fmt(report['best'])} (step {report['best']['step']})")
    t = report.get("test")
    if t:
        memory = report.get("memory") or {}
        if memory:
            lines += ["", f"memory of the test split: {memory.get('test', '?')}; of the train split: "
                      f"{memory.get('train', '?')}" + (" (ORACLE train set)" if report.get("oracle") else "")]
        lines += ["", f"test split, n = {t['n']} (F1 on {t['n_generated']}; {report['f1_definition']}); "
                  "differences to graph+text with paired bootstrap 95% intervals "
                  "(loss: condition - graph+text; F1: graph+text - condition; > 0 = graph+text better)", "",
                  "| condition | answer loss | token F1 | loss difference [95% CI] | F1 difference [95% CI] |",
                  "|---|---:|---:|---|---|"]
        diffs = t.get("differences", {})
        for name in CONDITIONS:
            if name not in t:
                continue
            r, d = t[name], diffs.get(name, {})
            f1 = f"{r['f1']:.4f}" if "f1" in r else "-"
            lines.append(f"| {name} | {r['loss']:.4f} | {f1} | {format_ci(d.get('loss'))} | {format_ci(d.get('f1'))} |")
    return "\n".join(lines)


def format_ci(d: dict[str, float] | None) -> str:
    """A paired difference as "+mean [+low, +high]" ("-" when there is none)."""
    return "-" if not d else f"{d['mean']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}]"
