"""Local memory graph (working memory -> PyG Data) and the graph-token encoder."""

from qgmem.graph.encoder import (
    EncoderConfig,
    GraphEncoder,
    GraphTokenEncoder,
    Projector,
)
from qgmem.graph.local_graph import (
    GraphConfig,
    GraphTriples,
    build_local_graph,
    empty_graph,
    feature_dims,
    graph_triples,
    normalize_name,
)

__all__ = [
    "EncoderConfig",
    "GraphConfig",
    "GraphEncoder",
    "GraphTokenEncoder",
    "GraphTriples",
    "Projector",
    "build_local_graph",
    "empty_graph",
    "feature_dims",
    "graph_triples",
    "normalize_name",
]
