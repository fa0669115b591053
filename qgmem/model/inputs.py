"""Working memory -> model example: the one place where the graph-token model's input is made.

Training preparation (`qgmem.training.prepare`) and inference (`qgmem.pipeline.MemoryPipeline`)
both call `build_example`, so an encoder is trained on exactly the inputs it later sees. The
prepared set stores the example's question, memory text and graph tensors; `example_from_row`
rebuilds the identical `GraphExample` from such a stored row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from qgmem.answer import question_text, serialize_working_memory
from qgmem.graph.local_graph import Embed, GraphConfig, build_local_graph
from qgmem.model.collate import GraphExample
from qgmem.types import Question, WorkingMemory


@dataclass
class InputConfig:
    """How a working memory becomes model input; fixed at prepare time, stored in the checkpoint."""

    graph: GraphConfig = field(default_factory=GraphConfig)
    text_with_graph: bool = False  # also write the graph as text triples into the memory text


def build_example(wm: WorkingMemory, embed: Embed, cfg: InputConfig | None = None, *,
                  embed_dim: int | None = None, answer: str | None = None) -> GraphExample:
    """The example of one question: local graph (embedded with `embed`), memory text with or
    without the graph triples, the question as the model reads it (dated when the benchmark gives
    a time) and, for training, the gold answer."""
    cfg = cfg or InputConfig()
    graph = build_local_graph(wm, embed, cfg.graph, embed_dim=embed_dim)
    text = serialize_working_memory(wm, with_graph=cfg.text_with_graph, graph=graph)
    return GraphExample(question=question_text(wm.question), memory_text=text, answer=answer, graph=graph,
                        id=wm.question.id)


def row_graph(row: dict[str, Any], node_dim: int, edge_dim: int):
    """The `torch_geometric` graph of a stored row (empty graphs keep their feature dims)."""
    import torch
    from torch_geometric.data import Data

    x = torch.tensor(row["x"], dtype=torch.float32).reshape(-1, node_dim)
    ea = torch.tensor(row["edge_attr"], dtype=torch.float32).reshape(-1, edge_dim)
    ei = torch.tensor(row["edge_index"], dtype=torch.long).reshape(-1, 2).t().contiguous()
    if x.shape[0] != row["num_nodes"] or ei.shape[1] != ea.shape[0] or (ei.numel() and int(ei.max()) >= x.shape[0]):
        raise ValueError(f"example {row.get('id')!r}: inconsistent graph (nodes {x.shape[0]} vs num_nodes "
                         f"{row['num_nodes']}, edges {ei.shape[1]} vs edge_attr {ea.shape[0]})")
    return Data(x=x, edge_index=ei, edge_attr=ea, num_nodes=x.shape[0],
                node_text=list(row.get("node_text", [])), edge_text=list(row.get("edge_text", [])),
                labels=list(row.get("edge_labels", [])))


def row_question(row: dict[str, Any]) -> str:
    """The question text of a stored row, as `build_example` wrote it."""
    q = Question(id=str(row.get("id", "")), text=str(row["question"]), answers=[], category="",
                 question_time=row.get("question_time") or None)
    return question_text(q)


def example_from_row(row: dict[str, Any], node_dim: int, edge_dim: int) -> GraphExample:
    """The `GraphExample` a prepared row stores (the same one `build_example` gave at prepare time)."""
    return GraphExample(question=row_question(row), memory_text=row["memory_text"], answer=row["answer"],
                        graph=row_graph(row, node_dim, edge_dim), id=row["id"])
