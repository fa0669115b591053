"""The prepared set on disk: one row per question (`example_record`), saved as a `datasets`
DatasetDict with splits train / val / test plus ``prepare_meta.json`` (written last).

Kept apart from the `qgmem prepare` job so that training reads prepared data without importing
the construction and retrieval code that wrote it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from qgmem.io import atomic_write_json, atomic_write_text
from qgmem.types import Question, WorkingMemory

SPLITS = ("train", "val", "test")


def example_record(q: Question, wm: WorkingMemory, ex: Any, split: str) -> dict[str, Any]:
    """A JSON-able row of one `GraphExample` `ex` of question `q`: everything training and
    evaluation need, graphs as nested lists (`qgmem.model.inputs.example_from_row` reads it back)."""
    graph = ex.graph
    ei = graph.edge_index.t().tolist() if graph.edge_index.numel() else []
    return {
        "id": q.id,
        "conversation_id": q.conversation_id,
        "split": split,
        "question": q.text,
        "question_time": q.question_time or "",
        "category": str(q.category),
        "answer": str(q.answers[0]),
        "answers": [str(a) for a in q.answers],
        "evidence": list(q.evidence),
        "memory_text": ex.memory_text,
        "labels": [it.label for it in wm.items],
        "item_texts": [it.text for it in wm.items],
        "item_turn_ids": [list(it.turn_ids) for it in wm.items],
        "x": graph.x.tolist(),
        "edge_index": ei,
        "edge_attr": graph.edge_attr.tolist(),
        "node_text": list(graph.node_text),
        "edge_text": list(graph.edge_text),
        "edge_labels": list(getattr(graph, "labels", [])),
        "num_nodes": int(graph.num_nodes),
    }


def features():
    """The `datasets.Features` of a prepared row."""
    from datasets import Features, Sequence, Value

    s = Value("string")
    return Features({
        "id": s, "conversation_id": s, "split": s, "question": s, "question_time": s, "category": s,
        "answer": s, "answers": Sequence(s), "evidence": Sequence(s), "memory_text": s,
        "labels": Sequence(s), "item_texts": Sequence(s), "item_turn_ids": Sequence(Sequence(s)),
        "x": Sequence(Sequence(Value("float32"))), "edge_index": Sequence(Sequence(Value("int64"))),
        "edge_attr": Sequence(Sequence(Value("float32"))), "node_text": Sequence(s), "edge_text": Sequence(s),
        "edge_labels": Sequence(s), "num_nodes": Value("int32"),
    })


def save_prepared(by_split: dict[str, list[dict[str, Any]]], out_dir: str | Path, config: dict[str, Any],
                  node_dim: int, edge_dim: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write rows (`example_record` shape) as the datasets splits + prepare_meta.json (atomically).

    `config` is the prepare config as a dict; the trainer reads the graph and retrieval settings
    it stores into checkpoints from here."""
    from datasets import Dataset, DatasetDict

    out = Path(out_dir)
    feats = features()
    # empty splits are not written (datasets cannot reload a 0-shard split); load_prepared recreates them
    dd = DatasetDict({s: Dataset.from_list(by_split[s], features=feats) for s in SPLITS if by_split.get(s)})
    tmp = out / "dataset.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    dd.save_to_disk(str(tmp))
    final = out / "dataset"
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    meta = {
        "complete": True,
        "config": config,
        "node_dim": node_dim,
        "edge_dim": edge_dim,
        "counts": {s: len(by_split.get(s, [])) for s in SPLITS},
        "empty_graphs": sum(1 for v in by_split.values() for r in v if r["num_nodes"] == 0),
        # the longest supervised answer, in UTF-8 bytes: bounds the logits training keeps (training/memory.py)
        "answer_bytes_max": max((len(str(r["answer"]).strip().encode("utf-8")) for v in by_split.values() for r in v),
                                default=0),
        **(extra or {}),
    }
    atomic_write_json(out / "prepare_meta.json", meta)
    atomic_write_text(out / "data_card.md", data_card(meta))
    return meta


def data_card(meta: dict[str, Any]) -> str:
    """A short human-readable card of a prepared set: source, counts, and how each split's memory was chosen
    (an "ORACLE" line when the answer key chose the train memories)."""
    cfg = meta.get("config", {})
    lines = [f"# Prepared set: {cfg.get('dataset', '?')}", "",
             f"- seed {cfg.get('seed')}, split {cfg.get('split')}, max_sessions {cfg.get('max_sessions')}, "
             f"max_turn_chars {cfg.get('max_turn_chars')}, drop_abstention {cfg.get('drop_abstention')}",
             f"- examples: " + ", ".join(f"{s} {n}" for s, n in meta.get("counts", {}).items())]
    lines += [f"- memory of {s}: {m}" for s, m in (meta.get("memory") or {}).items()]
    if meta.get("oracle"):
        lines.append("- ORACLE: the evidence labels chose the train memories (val and test never)")
    if meta.get("partial"):
        lines.append(f"- partial: {meta.get('conversations_done')} conversations finished")
    return "\n".join(lines) + "\n"


def load_prepared(out_dir: str | Path, prepare_hint: str = "qgmem prepare") -> tuple[dict[str, Any], dict[str, Any]]:
    """(meta, {split: datasets.Dataset}) of a finished prepared set; a clear error otherwise.

    `prepare_hint` is the command the error messages tell the user to run."""
    from datasets import Dataset, load_from_disk

    out = Path(out_dir)
    meta_path = out / "prepare_meta.json"
    if not meta_path.exists():
        raise FileNotFoundError(f"{out}: no prepared set here (missing prepare_meta.json); run `{prepare_hint}`")
    meta = json.loads(meta_path.read_text())
    if not meta.get("complete"):
        raise ValueError(f"{meta_path}: prepared set is incomplete; rerun `{prepare_hint}` to finish it")
    dd = load_from_disk(str(out / "dataset")) if any(meta.get("counts", {}).values()) else {}
    feats = features()
    return meta, {s: dd[s] if s in dd else Dataset.from_dict({k: [] for k in feats}, features=feats)
                  for s in SPLITS}
