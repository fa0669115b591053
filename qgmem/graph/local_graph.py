"""The working memory as a small directed graph (QGMem §III-C1).

Nodes are the subjects and objects of the activated units' triples, merged when they name the
same thing; each unit contributes one directed edge subject -relation-> object, in working-memory
rank order, so a graph has at most ``max_edges`` edges and ``2 * max_edges`` nodes. Node features
are frozen sentence embeddings of the node names; edge features are the predicate's embedding,
optionally followed by a rank feature and time features, so attention in the encoder can depend
on what the relation is, how highly it was ranked, and when it held.

The text side (`graph_triples`) needs no embedder and is shared with `qgmem.answer`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

import numpy as np
import torch
from torch_geometric.data import Data

from qgmem.types import AtomicUnit, MemoryItem, WorkingMemory

Embed = Callable[[list[str]], np.ndarray]

# Words that name the unit's own speaker. Second-person words are not aliased: "you" in a
# claim extracted from a turn names the other participant, which a unit does not record.
_SELF_ALIASES = frozenset({"i", "me", "my", "myself", "mine", "speaker", "the speaker"})

RANK_FEATURE_DIM = 1  # rank / (max_edges - 1): 0 = top-ranked
TIME_FEATURE_DIM = 3  # [has time, relative time within the graph in [0, 1], superseded]


@dataclass
class GraphConfig:
    max_edges: int = 10
    rank_feature: bool = True
    time_feature: bool = True


def feature_dims(cfg: GraphConfig, embed_dim: int) -> tuple[int, int]:
    """(node feature dim, edge feature dim) that `build_local_graph` produces for this config."""
    edge = embed_dim + (RANK_FEATURE_DIM if cfg.rank_feature else 0) + (TIME_FEATURE_DIM if cfg.time_feature else 0)
    return embed_dim, edge


def normalize_name(name: str) -> str:
    """Case-, whitespace- and punctuation-insensitive key for node merging."""
    s = unicodedata.normalize("NFKC", name).casefold()
    s = re.sub(r"[^\w\s]", " ", s)
    return " ".join(s.split())


def _unit_of(item: MemoryItem) -> AtomicUnit | None:
    return item.unit if item.unit is not None else None


def _triple_of(item: MemoryItem) -> tuple[str, str, str, str] | None:
    """(subject, relation, object, speaker) of an item, or None when it carries no triple.

    QGMem units carry their triple; other methods may put ``meta["triple"] = [s, r, o]``
    (and ``meta["speaker"]``) on their items to take part in the graph.
    """
    u = _unit_of(item)
    if u is not None:
        return u.subject, u.relation, u.object, u.speaker
    t = item.meta.get("triple") if item.meta else None
    if isinstance(t, (list, tuple)) and len(t) == 3:
        return str(t[0]), str(t[1]), str(t[2]), str(item.meta.get("speaker", ""))
    return None


def _time_of(item: MemoryItem) -> str | None:
    u = _unit_of(item)
    if u is None:
        return item.meta.get("time") if item.meta else None
    return u.fact_time_start or u.utterance_time


def _ordinal(iso: str | None) -> int | None:
    if not iso:
        return None
    try:
        return date.fromisoformat(iso[:10]).toordinal()
    except ValueError:
        m = re.match(r"^(\d{4})(?:-(\d{2}))?", iso)
        if not m:
            return None
        return date(int(m.group(1)), int(m.group(2) or 1), 1).toordinal()


@dataclass
class GraphTriples:
    """The embedder-free part of a local graph: names, edges and what they came from."""

    node_text: list[str] = field(default_factory=list)
    edge_index: list[tuple[int, int]] = field(default_factory=list)
    edge_text: list[str] = field(default_factory=list)
    unit_ids: list[str] = field(default_factory=list)  # one per edge
    labels: list[str] = field(default_factory=list)  # memory label (e.g. "M3") per edge
    times: list[str | None] = field(default_factory=list)  # per edge
    superseded: list[bool] = field(default_factory=list)  # per edge
    ranks: list[int] = field(default_factory=list)  # working-memory rank per edge (0 = top)
    skipped: list[str] = field(default_factory=list)  # labels of items without a usable triple


def graph_triples(wm: WorkingMemory, cfg: GraphConfig | None = None) -> GraphTriples:
    """Nodes and edges of the local graph of ``wm`` (no embeddings)."""
    cfg = cfg or GraphConfig()
    out = GraphTriples()
    index: dict[str, int] = {}

    def node(name: str, speaker: str) -> int:
        key = normalize_name(name)
        if key in _SELF_ALIASES and speaker.strip():
            name, key = speaker.strip(), normalize_name(speaker)
        if key not in index:
            index[key] = len(out.node_text)
            out.node_text.append(name.strip())
        return index[key]

    for rank, item in enumerate(wm.items):
        if len(out.edge_text) >= cfg.max_edges:
            break
        tri = _triple_of(item)
        if tri is None or not normalize_name(tri[0]) or not normalize_name(tri[2]) or not tri[1].strip():
            out.skipped.append(item.label)
            continue
        s, r, o, speaker = tri
        out.edge_index.append((node(s, speaker), node(o, speaker)))
        out.edge_text.append(r.strip())
        u = _unit_of(item)
        out.unit_ids.append(u.id if u is not None else item.label)
        out.labels.append(item.label)
        out.times.append(_time_of(item))
        out.superseded.append(bool(u.superseded) if u is not None else bool(item.meta.get("superseded", False)))
        out.ranks.append(rank)
    return out


def _embed(embed: Embed, texts: list[str], dim: int | None) -> np.ndarray:
    if texts:
        arr = np.asarray(embed(texts), dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(texts):
            raise ValueError(f"embedder returned shape {arr.shape} for {len(texts)} texts; expected ({len(texts)}, dim)")
        return arr
    if dim is None:
        dim = int(np.asarray(embed(["empty"]), dtype=np.float32).shape[1])
    return np.zeros((0, dim), dtype=np.float32)


def build_local_graph(wm: WorkingMemory, embed: Embed, cfg: GraphConfig | None = None,
                      embed_dim: int | None = None) -> Data:
    """Local memory graph of ``wm`` as a `torch_geometric.data.Data`.

    Fields: ``x`` [N, D] node-name embeddings, ``edge_index`` [2, E], ``edge_attr`` [E, D'] with
    D' from `feature_dims`, and per-node ``node_text`` and per-edge ``edge_text``, ``unit_ids``,
    ``labels`` (memory labels) and ``superseded`` lists.
    An empty working memory gives a valid graph with 0 nodes and 0 edges.
    """
    cfg = cfg or GraphConfig()
    tr = graph_triples(wm, cfg)
    x = _embed(embed, tr.node_text, embed_dim)
    dim = x.shape[1]
    rel = _embed(embed, tr.edge_text, dim)
    if rel.shape[1] != dim:
        raise ValueError(f"embedder gave node dim {dim} but edge dim {rel.shape[1]}")
    parts = [rel]
    n_e = len(tr.edge_text)
    if cfg.rank_feature:
        denom = max(cfg.max_edges - 1, 1)
        parts.append(np.asarray(tr.ranks, dtype=np.float32).reshape(n_e, 1) / denom)
    if cfg.time_feature:
        ords = [_ordinal(t) for t in tr.times]
        known = [o for o in ords if o is not None]
        lo, hi = (min(known), max(known)) if known else (0, 0)
        feat = np.zeros((n_e, TIME_FEATURE_DIM), dtype=np.float32)
        for i, o in enumerate(ords):
            if o is not None:
                feat[i, 0] = 1.0
                feat[i, 1] = (o - lo) / (hi - lo) if hi > lo else 1.0
            feat[i, 2] = 1.0 if tr.superseded[i] else 0.0
        parts.append(feat)
    edge_attr = np.concatenate(parts, axis=1) if n_e else np.zeros((0, feature_dims(cfg, dim)[1]), np.float32)
    edge_index = (torch.tensor(tr.edge_index, dtype=torch.long).t().contiguous() if n_e
                  else torch.zeros((2, 0), dtype=torch.long))
    return Data(
        x=torch.from_numpy(x), edge_index=edge_index, edge_attr=torch.from_numpy(edge_attr),
        num_nodes=len(tr.node_text), node_text=tr.node_text, edge_text=tr.edge_text,
        unit_ids=tr.unit_ids, labels=tr.labels, superseded=tr.superseded,
    )


def empty_graph(node_dim: int, edge_dim: int) -> Data:
    """A graph with no nodes (what an empty working memory gives)."""
    return Data(x=torch.zeros((0, node_dim)), edge_index=torch.zeros((2, 0), dtype=torch.long),
                edge_attr=torch.zeros((0, edge_dim)), num_nodes=0,
                node_text=[], edge_text=[], unit_ids=[], labels=[], superseded=[])
