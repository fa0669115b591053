"""qgmem: long-term conversational memory for LLM agents (QGMem and AnchorMem)."""

__version__ = "0.1.0"
