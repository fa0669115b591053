"""The local memory graph: a working memory -> PyG `Data` (nodes, relation edges, features)."""

from qgmem.graph.local_graph import (
    GraphConfig,
    GraphTriples,
    build_local_graph,
    empty_graph,
    feature_dims,
    graph_triples,
    normalize_name,
)

__all__ = ["GraphConfig", "GraphTriples", "build_local_graph", "empty_graph", "feature_dims", "graph_triples",
           "normalize_name"]
