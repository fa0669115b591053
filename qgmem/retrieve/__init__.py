"""Query-aware working-memory activation (QGMem §III-B): parse the question, retrieve over lexical,
dense and event-attribute channels, fuse with RRF into a candidate pool, rerank, and return the top-k
units as a `WorkingMemory`."""

from .config import RetrievalConfig

__all__ = ["RetrievalConfig"]
