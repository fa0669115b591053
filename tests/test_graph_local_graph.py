"""Local memory graph: node merging, edge order and bounds, features, empty memory."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_model_graph_token_lm import DIM, hash_embed

from qgmem.graph import (
    GraphConfig,
    build_local_graph,
    feature_dims,
    graph_triples,
    normalize_name,
)
from qgmem.types import AtomicUnit, MemoryItem, Question, WorkingMemory

Q = Question("q", "where does alice work?", ["Globex"], "4")


def unit(i: int, s: str, r: str, o: str, speaker: str = "Alice", **kw) -> AtomicUnit:
    return AtomicUnit(f"u{i}", "ns", "S1", f"{s} {r} {o}", f"D1:{i}", f"D1:{i}", [f"D1:{i}"], speaker, s, r, o, **kw)


def wm_of(units: list[AtomicUnit]) -> WorkingMemory:
    return WorkingMemory(Q, [MemoryItem(f"M{i + 1}", "unit", u.text, u.turn_ids, unit=u) for i, u in enumerate(units)],
                         "qgmem")


def test_nodes_merge_on_normalised_names_and_speaker_aliases() -> None:
    units = [unit(1, "I", "works at", "Acme Corp."), unit(2, "alice", "moved to", "Seattle"),
             unit(3, " ALICE ", "works at", "acme  corp"), unit(4, "me", "owns", "a dog", speaker="Bob")]
    tr = graph_triples(wm_of(units))
    assert tr.node_text == ["Alice", "Acme Corp.", "Seattle", "Bob", "a dog"]
    assert tr.edge_index == [(0, 1), (0, 2), (0, 1), (3, 4)]
    assert tr.edge_text == ["works at", "moved to", "works at", "owns"]
    assert tr.unit_ids == ["u1", "u2", "u3", "u4"] and tr.labels == ["M1", "M2", "M3", "M4"]
    assert normalize_name("Acme-Corp!") == normalize_name("acme corp")


def test_edges_follow_rank_order_and_are_bounded() -> None:
    units = [unit(i, f"person{i}", "likes", f"thing{i}") for i in range(15)]
    g = build_local_graph(wm_of(units), hash_embed, GraphConfig(max_edges=10))
    assert g.edge_index.shape == (2, 10) and g.num_nodes == 20  # at most k edges, 2k nodes
    assert g.unit_ids == [f"u{i}" for i in range(10)]
    assert [g.node_text[s] for s in g.edge_index[0].tolist()] == [f"person{i}" for i in range(10)]


def test_features_are_embeddings_plus_rank_and_time() -> None:
    units = [unit(1, "Alice", "works at", "Acme", utterance_time="2023-05-08"),
             unit(2, "Alice", "works at", "Globex", fact_time_start="2023-08-20", superseded=False),
             unit(3, "Bob", "reads", "Dune")]
    units[0].superseded = True
    cfg = GraphConfig(max_edges=10)
    g = build_local_graph(wm_of(units), hash_embed, cfg)
    node_dim, edge_dim = feature_dims(cfg, DIM)
    assert g.x.shape == (5, node_dim) and g.edge_attr.shape == (3, edge_dim) and edge_dim == DIM + 4
    assert g.x.dtype == torch.float32
    np.testing.assert_allclose(g.x.numpy(), hash_embed(["Alice", "Acme", "Globex", "Bob", "Dune"]))
    np.testing.assert_allclose(g.edge_attr[:, :DIM].numpy(), hash_embed(["works at", "works at", "reads"]))
    rank = g.edge_attr[:, DIM].tolist()
    assert rank == pytest.approx([0.0, 1 / 9, 2 / 9])
    has_time, rel_time, superseded = g.edge_attr[:, DIM + 1:].T.tolist()
    assert has_time == [1.0, 1.0, 0.0] and rel_time == [0.0, 1.0, 0.0] and superseded == [1.0, 0.0, 0.0]
    plain = build_local_graph(wm_of(units), hash_embed, GraphConfig(rank_feature=False, time_feature=False))
    assert plain.edge_attr.shape == (3, DIM) == (3, feature_dims(GraphConfig(rank_feature=False, time_feature=False), DIM)[1])


def test_empty_working_memory_gives_empty_graph() -> None:
    cfg = GraphConfig()
    g = build_local_graph(wm_of([]), hash_embed, cfg)
    assert g.num_nodes == 0 and g.x.shape == (0, DIM) and g.edge_index.shape == (2, 0)
    assert g.edge_attr.shape == (0, feature_dims(cfg, DIM)[1]) and g.edge_index.dtype == torch.long


def test_items_without_triples_are_skipped_and_reported() -> None:
    items = [MemoryItem("M1", "turn", "Alice: hi", ["D1:1"]),
             MemoryItem("M2", "event", "x", ["D1:2"], meta={"triple": ["Rex", "is a", "dog"], "speaker": "Alice"}),
             MemoryItem("M3", "unit", "y", ["D1:3"], unit=unit(3, "Alice", "likes", ""))]
    tr = graph_triples(WorkingMemory(Q, items, "anchormem"))
    assert tr.edge_text == ["is a"] and tr.node_text == ["Rex", "dog"] and tr.labels == ["M2"]
    assert tr.skipped == ["M1", "M3"]


def test_embedder_shape_errors_are_clear() -> None:
    with pytest.raises(ValueError, match="embedder returned shape"):
        build_local_graph(wm_of([unit(1, "a", "b", "c")]), lambda t: np.zeros((1, 4), np.float32))


def test_real_sentence_embedder_features() -> None:
    from qgmem.embed import get_embedder

    emb = get_embedder()
    units = [unit(1, "Alice", "works at", "Globex"), unit(2, "Alice", "visited", "Paris")]
    cfg = GraphConfig()
    g = build_local_graph(wm_of(units), emb.encode, cfg)
    assert (g.x.shape[1], g.edge_attr.shape[1]) == feature_dims(cfg, emb.dim) == (384, 388)
    assert torch.allclose(g.x.norm(dim=1), torch.ones(3), atol=1e-4)  # normalised, frozen embeddings
    sims = g.edge_attr[:, :384] @ torch.from_numpy(emb.encode(["is employed by", "travelled to"])).T
    assert sims.argmax(1).tolist() == [0, 1]  # predicate features carry relation meaning
