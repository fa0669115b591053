"""Graph encoder + projector: local memory graph -> graph token(s) in the LLM's embedding space.

Relation-aware message passing (TransformerConv with the predicate features as ``edge_dim``, so
attention weights depend on neighbour states *and* relations), global mean pooling, then a
two-layer MLP to ``num_graph_tokens * llm_hidden`` (QGMem §III-C2). ``llm_hidden`` always comes
from the LLM's config. A graph without nodes maps to a learned "empty" summary instead of the
zero/NaN that mean pooling over nothing would give.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch, Data
from torch_geometric.nn import TransformerConv, global_mean_pool


@dataclass
class EncoderConfig:
    node_dim: int = 384
    edge_dim: int = 384
    hidden: int = 256
    heads: int = 4
    layers: int = 2
    dropout: float = 0.1
    num_graph_tokens: int = 1
    projector_hidden: int = 1024

    def __post_init__(self) -> None:
        if self.hidden % self.heads:
            raise ValueError(f"EncoderConfig.hidden ({self.hidden}) must be divisible by heads ({self.heads})")
        if self.num_graph_tokens < 1:
            raise ValueError(f"EncoderConfig.num_graph_tokens must be >= 1, got {self.num_graph_tokens}")


class GraphEncoder(nn.Module):
    """Input projection, L x (TransformerConv + residual + LayerNorm), mean pool -> [B, hidden]."""

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.cfg = cfg
        self.inp = nn.Linear(cfg.node_dim, cfg.hidden)
        self.convs = nn.ModuleList(
            TransformerConv(cfg.hidden, cfg.hidden // cfg.heads, heads=cfg.heads, edge_dim=cfg.edge_dim,
                            concat=True, dropout=cfg.dropout)
            for _ in range(cfg.layers)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(cfg.hidden) for _ in range(cfg.layers))
        self.drop = nn.Dropout(cfg.dropout)
        self.act = nn.GELU()
        self.empty = nn.Parameter(torch.zeros(cfg.hidden))  # summary of a graph with no nodes

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None, batch: Tensor,
                num_graphs: int) -> Tensor:
        h = self.act(self.inp(x))
        if edge_attr is not None and edge_attr.size(0) == 0:
            edge_attr = edge_attr.reshape(0, self.cfg.edge_dim)
        for conv, norm in zip(self.convs, self.norms):
            h = norm(h + self.drop(self.act(conv(h, edge_index, edge_attr))))
        pooled = global_mean_pool(h, batch, size=num_graphs)
        counts = torch.bincount(batch, minlength=num_graphs)[:num_graphs]
        has_nodes = (counts > 0).unsqueeze(-1)
        return torch.where(has_nodes, pooled, self.empty.to(pooled.dtype).expand_as(pooled))


class Projector(nn.Module):
    """Two-layer MLP from the pooled graph summary to ``num_tokens`` LLM input embeddings."""

    def __init__(self, in_dim: int, hidden: int, llm_hidden: int, num_tokens: int):
        super().__init__()
        self.num_tokens, self.llm_hidden = num_tokens, llm_hidden
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.GELU(), nn.Linear(hidden, llm_hidden * num_tokens))

    def forward(self, z: Tensor) -> Tensor:
        return self.net(z).view(z.size(0), self.num_tokens, self.llm_hidden)


class GraphTokenEncoder(nn.Module):
    """`Batch` of local graphs -> graph tokens ``[B, num_graph_tokens, llm_hidden]``."""

    def __init__(self, cfg: EncoderConfig, llm_hidden: int):
        super().__init__()
        self.cfg, self.llm_hidden = cfg, int(llm_hidden)
        self.encoder = GraphEncoder(cfg)
        self.projector = Projector(cfg.hidden, cfg.projector_hidden, self.llm_hidden, cfg.num_graph_tokens)

    def forward(self, batch: Batch | Data) -> Tensor:
        if not isinstance(batch, Batch):
            batch = Batch.from_data_list([batch])
        dev = self.empty_device()
        x = batch.x.to(dev, torch.float32)
        if x.size(-1) != self.cfg.node_dim:
            raise ValueError(f"graph node features have dim {x.size(-1)}, encoder expects node_dim={self.cfg.node_dim}")
        ea = batch.edge_attr.to(dev, torch.float32) if getattr(batch, "edge_attr", None) is not None else None
        if ea is not None and ea.size(0) and ea.size(-1) != self.cfg.edge_dim:
            raise ValueError(f"graph edge features have dim {ea.size(-1)}, encoder expects edge_dim={self.cfg.edge_dim}")
        vec = batch.batch if batch.batch is not None else torch.zeros(x.size(0), dtype=torch.long)
        z = self.encoder(x, batch.edge_index.to(dev), ea, vec.to(dev), batch.num_graphs)
        return self.projector(z)

    def empty_device(self) -> torch.device:
        return self.encoder.empty.device
