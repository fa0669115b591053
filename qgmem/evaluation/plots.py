"""PNG plots for a run (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def primary_metric(summary: dict[str, Any]) -> tuple[str, str]:
    """(key, label): the judge when it ran, else the official LoCoMo F1."""
    return ("judge", "LLM-judge accuracy (%)") if summary["judge"]["enabled"] else ("f1_locomo", "F1, official LoCoMo (%)")


def _value(block: dict[str, Any], key: str) -> tuple[float, float, float]:
    """(mean, low, high) in percent, NaN when missing."""
    d = block.get(key)
    if key == "judge" and d:
        d = d.get("ci")
    if not d or d.get("n", 0) == 0:
        return (math.nan, math.nan, math.nan)
    return (d["mean"] * 100, d["low"] * 100, d["high"] * 100)


def plot_accuracy(summary: dict[str, Any], path: Path) -> None:
    """Grouped bars: per category (+ overall) per method, with 95% bootstrap CI error bars."""
    plt = _plt()
    key, label = primary_metric(summary)
    methods = list(summary["methods"])
    cats: list[str] = []
    for m in summary["methods"].values():
        for c in m["categories"]:
            if c not in cats:
                cats.append(c)
    groups = cats + ["overall"]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(groups) * max(1, len(methods)) / 2 + 3), 4))
    width = 0.8 / max(1, len(methods))
    for i, name in enumerate(methods):
        m = summary["methods"][name]
        means, lo, hi = [], [], []
        for g in groups:
            block = m["overall"] if g == "overall" else m["categories"].get(g, {})
            if summary["benchmark"] == "locomo" and g == "5":
                block = m.get("abstention", {})
                v = _value(block, key if key == "judge" else "f1_locomo")
            else:
                v = _value(block, key)
            means.append(v[0])
            lo.append(v[0] - v[1] if not math.isnan(v[0]) else 0)
            hi.append(v[2] - v[0] if not math.isnan(v[0]) else 0)
        xs = [j + i * width for j in range(len(groups))]
        ax.bar(xs, [0 if math.isnan(v) else v for v in means], width, yerr=[lo, hi], capsize=3, label=name)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(groups))])
    names = [("5 (abstention)" if summary["benchmark"] == "locomo" and g == "5" else g) for g in groups]
    ax.set_xticklabels(names)
    ax.set_ylabel(label)
    ax.set_title(f"{summary['benchmark']}: {label} per category (95% CI)")
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_cost_vs_accuracy(summary: dict[str, Any], path: Path) -> None:
    """One point per method: mean context tokens per question vs overall score (with CI)."""
    plt = _plt()
    key, label = primary_metric(summary)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, m in summary["methods"].items():
        x = m["costs"]["context_tokens_mean"]
        y, lo, hi = _value(m["overall"], key)
        if math.isnan(y):
            continue
        ax.errorbar([x], [y], yerr=[[y - lo], [hi - y]], fmt="o", capsize=4, label=name)
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(5, 5))
    ax.set_xlabel("retrieved-context tokens per question (mean)")
    ax.set_ylabel(f"overall {label}")
    ax.set_title(f"{summary['benchmark']}: cost vs accuracy")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_retrieval(summary: dict[str, Any], metrics: list[str], path: Path) -> None:
    """One panel per metric: grouped bars per question category (+ overall), one bar per method."""
    plt = _plt()
    groups = [g for g in summary["groups"] if g.startswith("category ")] + ["overall"]
    methods = list(summary["groups"]["overall"])
    fig, axes = plt.subplots(len(metrics), 1, figsize=(max(7.0, 0.9 * len(groups) * max(1, len(methods)) / 2 + 3),
                                                       3.2 * len(metrics)), squeeze=False)
    width = 0.8 / max(1, len(methods))
    for ax, metric in zip(axes[:, 0], metrics):
        for i, name in enumerate(methods):
            vals = [summary["groups"][g].get(name, {}).get(metric) for g in groups]
            ax.bar([j + i * width for j in range(len(groups))], [v if isinstance(v, float) else 0 for v in vals],
                   width, label=name)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(groups))])
        ax.set_xticklabels([g.removeprefix("category ") for g in groups], rotation=15, fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_ylabel(metric)
    axes[0, 0].set_title(f"{summary['benchmark']}: retrieval per question category")
    axes[0, 0].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
