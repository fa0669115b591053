"""The graph-token model: encoder + projector, the frozen-LLM wrapper `GraphTokenLM` and its collator."""

from qgmem.model.collate import (
    GRAPH_SENTINEL,
    IGNORE_INDEX,
    GraphExample,
    GraphTokenCollator,
)
from qgmem.model.encoder import EncoderConfig, GraphEncoder, GraphTokenEncoder, Projector
from qgmem.model.graph_token_lm import GraphTokenLM, GraphTokenLMOutput
from qgmem.model.inputs import InputConfig, build_example, example_from_row

__all__ = [
    "GRAPH_SENTINEL", "IGNORE_INDEX", "EncoderConfig", "GraphEncoder", "GraphExample", "GraphTokenCollator",
    "GraphTokenEncoder", "GraphTokenLM", "GraphTokenLMOutput", "InputConfig", "Projector", "build_example",
    "example_from_row",
]
