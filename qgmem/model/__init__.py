"""GraphTokenLM (frozen LLM + graph token), its collator, and working-memory text serialisation."""

from qgmem.model.collate import (
    GRAPH_SENTINEL,
    IGNORE_INDEX,
    GraphExample,
    GraphTokenCollator,
    example_from_working_memory,
)
from qgmem.model.graph_token_lm import GraphTokenLM, GraphTokenLMOutput
from qgmem.model.serialize import (
    answer_messages,
    parse_answer,
    serialize_working_memory,
)

__all__ = [
    "GRAPH_SENTINEL", "IGNORE_INDEX", "GraphExample", "GraphTokenCollator", "GraphTokenLM", "GraphTokenLMOutput",
    "answer_messages", "example_from_working_memory", "parse_answer", "serialize_working_memory",
]
