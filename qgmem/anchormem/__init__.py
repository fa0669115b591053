"""AnchorMem (facts as retrieval anchors, immutable context chunks, associative event graph)."""

from .config import AnchorMemConfig
from .events import find_clusters, is_redundant, parse_event_reply, redundancy_threshold
from .facts import parse_facts_reply
from .method import AnchorMemMethod
from .units import Chunk, Event, Fact, make_chunks

__all__ = ["AnchorMemConfig", "AnchorMemMethod", "Chunk", "Event", "Fact", "make_chunks", "find_clusters",
           "is_redundant", "redundancy_threshold", "parse_event_reply", "parse_facts_reply"]
