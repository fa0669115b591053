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

Designs for the positive control (bench/graph_control.py measures them): ``features="llm"`` replaces
the stored sentence-embedder features by the frozen LLM's own input embeddings of the node names and
relation phrases (`qgmem.model.llm_space`; rank and time features kept), so a value name reaches the
encoder in the space the LLM reads; ``pooling="query"`` gives K tokens by attention over the edges with
the question as the query (`qgmem.model.query_pool`); ``token_residual="words"`` (with query pooling)
adds the attended edge's own words, as LLM input embeddings, to each token. The LLM-space options need
the LLM's tokenizer and embeddings (`attach_llm`, which `GraphTokenLM` calls) and, for query pooling,
the question of each graph (``forward(batch, questions=...)``; the collator's batch carries them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch, Data
from torch_geometric.nn import TransformerConv, global_mean_pool

from qgmem.model.llm_space import LLMTextEmbedder, masked_mean
from qgmem.model.query_pool import EdgeWords, QueryPool, question_match

POOLINGS = ("mean", "edges", "query")
TOKEN_SCALES = ("none", "embedding")
FEATURES = ("sentence", "llm")
TOKEN_RESIDUALS = ("none", "words")


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
    pooling: str = "mean"  # "mean" (paper: mean over nodes) | "edges" (a token per edge) | "query" (K tokens)
    token_scale: str = "none"  # "none" | "embedding" (tokens at the LLM's mean input-embedding norm)
    features: str = "sentence"  # "sentence" (the graph's stored features) | "llm" (the LLM's embeddings of the text)
    token_residual: str = "none"  # "none" | "words" (query pooling: + the attended edge's words as LLM embeddings)

    def __post_init__(self) -> None:
        if self.hidden % self.heads:
            raise ValueError(f"EncoderConfig.hidden ({self.hidden}) must be divisible by heads ({self.heads})")
        if self.num_graph_tokens < 1:
            raise ValueError(f"EncoderConfig.num_graph_tokens must be >= 1, got {self.num_graph_tokens}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"EncoderConfig.pooling must be one of {POOLINGS}, got {self.pooling!r}")
        if self.token_scale not in TOKEN_SCALES:
            raise ValueError(f"EncoderConfig.token_scale must be one of {TOKEN_SCALES}, got {self.token_scale!r}")
        if self.features not in FEATURES:
            raise ValueError(f"EncoderConfig.features must be one of {FEATURES}, got {self.features!r}")
        if self.token_residual not in TOKEN_RESIDUALS:
            raise ValueError(f"EncoderConfig.token_residual must be one of {TOKEN_RESIDUALS}, "
                             f"got {self.token_residual!r}")
        if self.token_residual != "none" and self.pooling != "query":
            raise ValueError(f"EncoderConfig.token_residual={self.token_residual!r} needs pooling='query', "
                             f"got pooling={self.pooling!r}")
        if (self.features == "llm" or self.pooling == "query") and self.edge_dim < self.node_dim:
            raise ValueError(f"EncoderConfig.edge_dim ({self.edge_dim}) < node_dim ({self.node_dim}): the edge "
                             "features must be the relation's embedding followed by rank/time features")

    @property
    def edge_extras(self) -> int:
        """Rank and time features at the end of each edge's features (after the relation's embedding)."""
        return self.edge_dim - self.node_dim

    @property
    def needs_llm(self) -> bool:
        """Whether the encoder reads text through the LLM's embeddings (`GraphTokenEncoder.attach_llm`)."""
        return self.features == "llm" or self.pooling == "query"


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
        node_dim, edge_dim, hidden, heads, layers, dropout: of the `GraphEncoder` (node/edge dims of
            the stored graphs; with ``features="llm"`` the encoder reads ``llm_hidden``-wide features instead).
        llm_hidden: the LLM's input-embedding size (read from the LLM, never a constant).
        num_graph_tokens: graph tokens per example.
        projector_hidden: width of the projector's hidden layer.
        pooling, token_scale, features, token_residual: the design (`EncoderConfig`).
    """

    def __init__(self, node_dim: int, edge_dim: int, llm_hidden: int, *, hidden: int = 256, heads: int = 4,
                 layers: int = 2, dropout: float = 0.1, num_graph_tokens: int = 1, projector_hidden: int = 1024,
                 pooling: str = "mean", token_scale: str = "none", features: str = "sentence",
                 token_residual: str = "none"):
        super().__init__()
        self.cfg = EncoderConfig(node_dim=node_dim, edge_dim=edge_dim, hidden=hidden, heads=heads, layers=layers,
                                 dropout=dropout, num_graph_tokens=num_graph_tokens, projector_hidden=projector_hidden,
                                 pooling=pooling, token_scale=token_scale, features=features,
                                 token_residual=token_residual)
        self.llm_hidden = int(llm_hidden)
        self.words: LLMTextEmbedder | None = None  # set by `attach_llm`
        node_in, edge_in = node_dim, edge_dim
        if features == "llm":
            node_in, edge_in = self.llm_hidden, self.llm_hidden + self.cfg.edge_extras
        self.encoder = GraphEncoder(node_in, edge_in, hidden, heads, layers, dropout)
        if pooling == "edges":
            self.slots = EdgeSlots(hidden, edge_in, num_graph_tokens)
            self.projector = Projector(3 * hidden, projector_hidden, self.llm_hidden, 1)
        elif pooling == "query":
            self.pool = QueryPool(hidden, edge_in, self.cfg.edge_extras, self.llm_hidden, num_graph_tokens,
                                  projector_hidden, residual=token_residual == "words")
        else:
            self.projector = Projector(hidden, projector_hidden, self.llm_hidden, num_graph_tokens)
        if pooling != "mean":
            self.encoder.empty.requires_grad_(False)  # the mean pool's empty-graph summary is unused here
        if token_scale == "embedding":
            self.gain = nn.Parameter(torch.ones(()))
            # the LLM's mean input-embedding norm; `set_token_norm` sets it (GraphTokenLM does, from its LLM)
            self.register_buffer("token_norm", torch.ones(()), persistent=False)

    @classmethod
    def from_config(cls, cfg: EncoderConfig, llm_hidden: int) -> GraphTokenEncoder:
        return cls(cfg.node_dim, cfg.edge_dim, llm_hidden, hidden=cfg.hidden, heads=cfg.heads, layers=cfg.layers,
                   dropout=cfg.dropout, num_graph_tokens=cfg.num_graph_tokens, projector_hidden=cfg.projector_hidden,
                   pooling=cfg.pooling, token_scale=cfg.token_scale, features=cfg.features,
                   token_residual=cfg.token_residual)

    def set_token_norm(self, embedding_weight: Tensor) -> None:
        """Remember the mean row norm of the LLM's input embeddings (used when token_scale="embedding")."""
        if self.cfg.token_scale == "embedding":
            self.token_norm.fill_(float(embedding_weight.detach().float().norm(dim=-1).mean()))

    def attach_llm(self, tokenizer: Any, embedding_weight: Tensor) -> None:
        """Read text through this LLM's tokenizer and input embeddings (held by reference, never trained)."""
        if int(embedding_weight.size(-1)) != self.llm_hidden:
            raise ValueError(f"LLM embeddings have width {embedding_weight.size(-1)}, encoder expects "
                             f"llm_hidden={self.llm_hidden}")
        self.words = LLMTextEmbedder(tokenizer, embedding_weight)
        self.set_token_norm(embedding_weight)

    def extra_repr(self) -> str:
        return (f"llm_hidden={self.llm_hidden}, num_graph_tokens={self.cfg.num_graph_tokens}, "
                f"pooling={self.cfg.pooling}, features={self.cfg.features}")

    def forward(self, batch: Batch | Data, questions: list[str] | None = None) -> Tensor:
        """Graph tokens of `batch`; `questions` (one per graph) are read by query pooling only."""
        if not isinstance(batch, Batch):
            batch = Batch.from_data_list([batch])
        dev = self.empty_device()
        x = batch.x.to(dev, torch.float32)
        if self.cfg.features == "sentence" and x.size(-1) != self.cfg.node_dim:
            raise ValueError(f"graph node features have dim {x.size(-1)}, encoder expects node_dim={self.cfg.node_dim}")
        ea = batch.edge_attr.to(dev, torch.float32) if getattr(batch, "edge_attr", None) is not None else None
        if ea is not None and ea.size(0) and ea.size(-1) != self.cfg.edge_dim:
            raise ValueError(f"graph edge features have dim {ea.size(-1)}, encoder expects "
                             f"edge_dim={self.cfg.edge_dim}")
        vec = (batch.batch if batch.batch is not None else torch.zeros(x.size(0), dtype=torch.long)).to(dev)
        ei = batch.edge_index.to(dev)
        n_graphs = batch.num_graphs
        if ea is None:
            ea = torch.zeros((ei.size(1), self.cfg.edge_dim), device=dev)
        words = self._edge_words(batch, questions, vec, ei, dev) if self.cfg.needs_llm else None
        if self.cfg.features == "llm":
            x = words[0]
            ea = torch.cat([words[1], ea[:, ea.size(1) - self.cfg.edge_extras:]], dim=-1)
        if self.cfg.pooling == "edges":
            slots = self.slots(self.encoder.node_states(x, ei, ea), ei, ea, vec, n_graphs)  # [B, T, 3h]
            tokens = self.projector(slots.reshape(-1, slots.size(-1))).view(slots.size(0), slots.size(1), -1)
        elif self.cfg.pooling == "query":
            tokens, _ = self.pool(self.encoder.node_states(x, ei, ea), ei, ea, vec, n_graphs, words[2])
        else:
            tokens = self.projector(self.encoder(x, ei, ea, vec, n_graphs))
        if self.cfg.token_scale == "embedding":
            tokens = tokens / tokens.norm(dim=-1, keepdim=True).clamp_min(1e-6) * (self.token_norm * self.gain)
        return tokens

    def _edge_words(self, batch: Batch, questions: list[str] | None, vec: Tensor, ei: Tensor, dev: torch.device
                    ) -> tuple[Tensor, Tensor, EdgeWords | None]:
        """(node name embeddings ``[N, H]``, relation embeddings ``[E, H]``, the edges' words and their match
        with the question (query pooling only)), all in the LLM's input-embedding space."""
        if self.words is None:
            raise ValueError(f"encoder design (features={self.cfg.features!r}, pooling={self.cfg.pooling!r}) reads "
                             "text through the LLM: call attach_llm(tokenizer, embedding_weight) first")
        nodes, rels = graph_texts(batch, "node_text", vec.numel()), graph_texts(batch, "edge_text", ei.size(1))
        n_tok, n_mask = self.words.token_sets(nodes, dev)
        r_tok, r_mask = self.words.token_sets(rels, dev)
        n_mean, r_mean = masked_mean(n_tok, n_mask), masked_mean(r_tok, r_mask)
        if self.cfg.pooling != "query":
            return n_mean, r_mean, None
        if questions is None or len(questions) != batch.num_graphs:
            got = "none" if questions is None else len(questions)
            raise ValueError(f"query pooling needs one question per graph: {batch.num_graphs} graphs, {got} questions")
        q_tok, q_mask = self.words.token_sets([str(q) for q in questions], dev)
        c = self.words.center().to(dev)
        n_match = question_match(n_tok - c, n_mask, q_tok[vec] - c, q_mask[vec])
        e_graph = vec[ei[0]]
        r_match = question_match(r_tok - c, r_mask, q_tok[e_graph] - c, q_mask[e_graph])
        src, dst = ei
        return n_mean, r_mean, EdgeWords(subject=n_mean[src], relation=r_mean, object=n_mean[dst],
                                         match=torch.stack([n_match[src], r_match, n_match[dst]], dim=-1),
                                         question=masked_mean(q_tok, q_mask))

    def empty_device(self) -> torch.device:
        return self.encoder.empty.device


def graph_texts(batch: Batch, key: str, expected: int) -> list[str]:
    """The node names (``node_text``) or relation phrases (``edge_text``) of a batch, flattened in node/edge
    order; a graph that lacks them cannot be read in the LLM's space (a clear error, not a guess)."""
    texts = getattr(batch, key, None)
    if texts is None:
        raise ValueError(f"graphs have no {key!r}: the LLM-space encoder designs read node and relation text")
    flat = [t for per_graph in texts for t in per_graph] if texts and isinstance(texts[0], (list, tuple)) \
        else list(texts)
    if len(flat) != expected:
        what = "nodes" if key == "node_text" else "edges"
        raise ValueError(f"graphs have {len(flat)} {key!r} entries for {expected} {what}")
    return [str(t) for t in flat]
