"""Graph encoder + projector: local memory graph -> graph token(s) in the LLM's embedding space.

Relation-aware message passing (TransformerConv with the predicate features as ``edge_dim``, so
attention weights depend on neighbour states *and* relations), global mean pooling, then a
two-layer MLP to ``num_graph_tokens * llm_hidden`` (QGMem §III-C2). ``llm_hidden`` always comes
from the LLM's config. A graph without nodes maps to a learned "empty" summary instead of the
zero/NaN that mean pooling over nothing would give.

Two variants stay configurable beside the paper's single mean-pooled token (the graph-token
experiment in bench/RESULTS.md measures them): ``pooling="edges"`` gives one token per edge (one
per working-memory unit, in rank order: its subject state, object state and relation), so the LLM
sees the graph item by item instead of as one average; ``token_scale="embedding"`` rescales every
token to the mean norm of the LLM's input embeddings (times a learned gain), so a token starts at
the scale the frozen LLM reads instead of wherever the projector's initialisation puts it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch, Data
from torch_geometric.nn import TransformerConv, global_mean_pool


POOLINGS = ("mean", "edges")
TOKEN_SCALES = ("none", "embedding")


@dataclass
class EncoderConfig:
    node_dim: int = 384
    edge_dim: int = 384
    hidden: int = 256
    heads: int = 4
    layers: int = 2
    dropout: float = 0.1
    num_graph_tokens: int = 1  # with pooling="edges": one per edge slot (the first edges in rank order)
    projector_hidden: int = 1024
    pooling: str = "mean"  # "mean" (paper: mean over nodes) | "edges" (a token per edge)
    token_scale: str = "none"  # "none" | "embedding" (tokens at the LLM's mean input-embedding norm)

    def __post_init__(self) -> None:
        if self.hidden % self.heads:
            raise ValueError(f"EncoderConfig.hidden ({self.hidden}) must be divisible by heads ({self.heads})")
        if self.num_graph_tokens < 1:
            raise ValueError(f"EncoderConfig.num_graph_tokens must be >= 1, got {self.num_graph_tokens}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"EncoderConfig.pooling must be one of {POOLINGS}, got {self.pooling!r}")
        if self.token_scale not in TOKEN_SCALES:
            raise ValueError(f"EncoderConfig.token_scale must be one of {TOKEN_SCALES}, got {self.token_scale!r}")


class GraphEncoder(nn.Module):
    r"""Relation-aware message passing over one batch of local graphs, mean-pooled per graph.

    .. math::
        h^{(0)}_i = \mathrm{GELU}(W_{in} x_i)

        h^{(l+1)}_i = \mathrm{LayerNorm}\big(h^{(l)}_i + \mathrm{Dropout}(\mathrm{GELU}(
            \mathrm{TransformerConv}_l(h^{(l)}, e)_i))\big)

        z_G = \frac{1}{|V_G|} \sum_{i \in V_G} h^{(L)}_i \quad (z_G = e_{\varnothing} \text{ if } V_G = \emptyset)

    where `TransformerConv` (Shi et al., 2021) attends over neighbours with the edge features
    ``e_ij`` (predicate embedding, rank, time) added to keys and values, ``heads`` heads of width
    ``hidden // heads`` concatenated, and ``e_∅`` is a learned summary for graphs without nodes.

    Args:
        node_dim: node feature size (the frozen sentence embedder's dim).
        edge_dim: edge feature size (`qgmem.graph.feature_dims`).
        hidden: width of the node states; divisible by ``heads``.
        heads: attention heads per layer.
        layers: message-passing layers ``L``.
        dropout: on attention weights and on each layer's update.
    """

    def __init__(self, node_dim: int, edge_dim: int, hidden: int = 256, heads: int = 4, layers: int = 2,
                 dropout: float = 0.1):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"GraphEncoder hidden ({hidden}) must be divisible by heads ({heads})")
        self.node_dim, self.edge_dim, self.hidden = int(node_dim), int(edge_dim), int(hidden)
        self.heads, self.layers, self.dropout = int(heads), int(layers), float(dropout)
        self.inp = nn.Linear(node_dim, hidden)
        self.convs = nn.ModuleList(
            TransformerConv(hidden, hidden // heads, heads=heads, edge_dim=edge_dim, concat=True, dropout=dropout)
            for _ in range(layers)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(layers))
        self.drop = nn.Dropout(dropout)
        self.act = nn.GELU()
        self.empty = nn.Parameter(torch.zeros(hidden))  # summary of a graph with no nodes

    @classmethod
    def from_config(cls, cfg: EncoderConfig) -> GraphEncoder:
        return cls(cfg.node_dim, cfg.edge_dim, cfg.hidden, cfg.heads, cfg.layers, cfg.dropout)

    def extra_repr(self) -> str:
        return (f"node_dim={self.node_dim}, edge_dim={self.edge_dim}, hidden={self.hidden}, heads={self.heads}, "
                f"layers={self.layers}, dropout={self.dropout}")

    def node_states(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None) -> Tensor:
        """:math:`h^{(L)}`, one row per node of the batch."""
        h = self.act(self.inp(x))
        if edge_attr is not None and edge_attr.size(0) == 0:
            edge_attr = edge_attr.reshape(0, self.edge_dim)
        for conv, norm in zip(self.convs, self.norms):
            h = norm(h + self.drop(self.act(conv(h, edge_index, edge_attr))))
        return h

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None, batch: Tensor,
                num_graphs: int) -> Tensor:
        h = self.node_states(x, edge_index, edge_attr)
        pooled = global_mean_pool(h, batch, size=num_graphs)
        has_nodes = (torch.bincount(batch, minlength=num_graphs)[:num_graphs] > 0).unsqueeze(-1)
        return torch.where(has_nodes, pooled, self.empty.to(pooled.dtype).expand_as(pooled))


class EdgeSlots(nn.Module):
    """Node states -> one vector per edge slot ``[B, slots, 3 * hidden]``: the edge's subject state,
    object state and projected relation features, edges of each graph in their stored (rank) order;
    a graph with fewer edges fills its remaining slots with a learned "no edge" vector."""

    def __init__(self, hidden: int, edge_dim: int, slots: int):
        super().__init__()
        self.slots = int(slots)
        self.rel = nn.Linear(edge_dim, hidden)
        self.none = nn.Parameter(torch.zeros(3 * hidden))

    def forward(self, h: Tensor, edge_index: Tensor, edge_attr: Tensor | None, batch: Tensor,
                num_graphs: int) -> Tensor:
        out = self.none.to(h.dtype).expand(num_graphs, self.slots, -1).clone()
        if edge_index.size(1) == 0:
            return out
        src, dst = edge_index
        rel = self.rel(edge_attr) if edge_attr is not None else torch.zeros_like(h[src])
        vec = torch.cat([h[src], h[dst], rel], dim=-1)
        graph = batch[src]
        first = torch.zeros(num_graphs + 1, dtype=torch.long, device=h.device)  # each graph's first edge
        first[1:] = torch.cumsum(torch.bincount(graph, minlength=num_graphs), 0)
        slot = torch.arange(graph.numel(), device=h.device) - first[graph]
        keep = slot < self.slots
        out[graph[keep], slot[keep]] = vec[keep]
        return out


class Projector(nn.Module):
    r"""Two-layer MLP from the pooled graph summary to ``num_tokens`` LLM input embeddings:
    :math:`T = \mathrm{reshape}(W_2\,\mathrm{GELU}(W_1 z + b_1) + b_2,\ [\text{num\_tokens}, \text{llm\_hidden}])`."""

    def __init__(self, in_dim: int, hidden: int, llm_hidden: int, num_tokens: int):
        super().__init__()
        self.in_dim, self.hidden, self.num_tokens, self.llm_hidden = in_dim, hidden, num_tokens, llm_hidden
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.GELU(), nn.Linear(hidden, llm_hidden * num_tokens))

    def extra_repr(self) -> str:
        return f"in_dim={self.in_dim}, hidden={self.hidden}, llm_hidden={self.llm_hidden}, num_tokens={self.num_tokens}"

    def forward(self, z: Tensor) -> Tensor:
        return self.net(z).view(z.size(0), self.num_tokens, self.llm_hidden)


class GraphTokenEncoder(nn.Module):
    r"""`Batch` of local graphs -> graph tokens ``[B, num_graph_tokens, llm_hidden]``:
    :math:`T_G = \mathrm{Projector}(\mathrm{GraphEncoder}(G))`.

    Args:
        node_dim, edge_dim, hidden, heads, layers, dropout: of the `GraphEncoder`.
        llm_hidden: the LLM's input-embedding size (read from the LLM, never a constant).
        num_graph_tokens: graph tokens per example.
        projector_hidden: width of the projector's hidden layer.
    """

    def __init__(self, node_dim: int, edge_dim: int, llm_hidden: int, *, hidden: int = 256, heads: int = 4,
                 layers: int = 2, dropout: float = 0.1, num_graph_tokens: int = 1, projector_hidden: int = 1024,
                 pooling: str = "mean", token_scale: str = "none"):
        super().__init__()
        self.cfg = EncoderConfig(node_dim=node_dim, edge_dim=edge_dim, hidden=hidden, heads=heads, layers=layers,
                                 dropout=dropout, num_graph_tokens=num_graph_tokens, projector_hidden=projector_hidden,
                                 pooling=pooling, token_scale=token_scale)
        self.llm_hidden = int(llm_hidden)
        self.encoder = GraphEncoder(node_dim, edge_dim, hidden, heads, layers, dropout)
        if pooling == "edges":
            self.slots = EdgeSlots(hidden, edge_dim, num_graph_tokens)
            self.projector = Projector(3 * hidden, projector_hidden, self.llm_hidden, 1)
            self.encoder.empty.requires_grad_(False)  # the mean pool's empty-graph summary is unused here
        else:
            self.projector = Projector(hidden, projector_hidden, self.llm_hidden, num_graph_tokens)
        if token_scale == "embedding":
            self.gain = nn.Parameter(torch.ones(()))
            # the LLM's mean input-embedding norm; `set_token_norm` sets it (GraphTokenLM does, from its LLM)
            self.register_buffer("token_norm", torch.ones(()), persistent=False)

    @classmethod
    def from_config(cls, cfg: EncoderConfig, llm_hidden: int) -> GraphTokenEncoder:
        return cls(cfg.node_dim, cfg.edge_dim, llm_hidden, hidden=cfg.hidden, heads=cfg.heads, layers=cfg.layers,
                   dropout=cfg.dropout, num_graph_tokens=cfg.num_graph_tokens, projector_hidden=cfg.projector_hidden,
                   pooling=cfg.pooling, token_scale=cfg.token_scale)

    def set_token_norm(self, embedding_weight: Tensor) -> None:
        """Remember the mean row norm of the LLM's input embeddings (used when token_scale="embedding")."""
        if self.cfg.token_scale == "embedding":
            self.token_norm.fill_(float(embedding_weight.detach().float().norm(dim=-1).mean()))

    def extra_repr(self) -> str:
        return f"llm_hidden={self.llm_hidden}, num_graph_tokens={self.cfg.num_graph_tokens}"

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
        vec = (batch.batch if batch.batch is not None else torch.zeros(x.size(0), dtype=torch.long)).to(dev)
        ei = batch.edge_index.to(dev)
        if self.cfg.pooling == "edges":
            slots = self.slots(self.encoder.node_states(x, ei, ea), ei, ea, vec, batch.num_graphs)  # [B, T, 3h]
            tokens = self.projector(slots.reshape(-1, slots.size(-1))).view(slots.size(0), slots.size(1), -1)
        else:
            tokens = self.projector(self.encoder(x, ei, ea, vec, batch.num_graphs))
        if self.cfg.token_scale == "embedding":
            tokens = tokens / tokens.norm(dim=-1, keepdim=True).clamp_min(1e-6) * (self.token_norm * self.gain)
        return tokens

    def empty_device(self) -> torch.device:
        return self.encoder.empty.device
