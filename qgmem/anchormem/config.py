"""AnchorMem settings. Defaults follow the paper's main experiments (AnchorMem §5.1, A.2).

`chunk_turns=2`: the paper calls the fact extractor once per "interaction content" C_i; its
Table 4 reports 3,007 extraction calls on LoCoMo, and LoCoMo split into 2-turn chunks inside each
session gives 3,011 chunks (272 whole sessions would give 272 calls), so C_i is one exchange.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..llm.config import LLMConfig


@dataclass
class AnchorMemConfig:
    chunk_turns: int = 2  # turns per immutable context chunk inside a session; 0 = one chunk per session
    extractor: str = "rule"  # "rule" (qgmem.construct rule units as facts) | "llm" (prompts/extract_facts.txt)
    integrator: str = "auto"  # "llm" | "concat" (deterministic, no LLM) | "auto" = llm when an LLM is given
    tau: float = 0.85  # inter-fact similarity threshold (strict >)
    n_neighbors: int = 3  # N: top-N neighbours per fact
    top_k: int = 10  # facts and events retrieved per question (each)
    embedder: str = "minilm"  # packaged all-MiniLM-L6-v2
    dedupe_identical_clusters: bool = True  # the same fact set reached from two seeds makes one event
    event_turns: str = "facts"  # event turn_ids: "facts" (its facts' spans) | "chunks" (its facts' chunks)
    item_order: str = "score"  # "score": contexts and events merged by query similarity | "contexts_first"
    fact_max_tokens: int = 512
    event_max_tokens: int = 256
    llm_retries: int = 1  # re-asks after an unparseable reply before the item is recorded as a failure
    save_every: int = 16  # LLM items between checkpoints in the store (resumable builds)
    max_clusters: int = 0  # quick runs only: integrate at most this many retained clusters (0 = all)
    llm: LLMConfig | None = None  # backend for extractor/integrator "llm" (None: no LLM, rule + concat)

    def __post_init__(self) -> None:
        if self.chunk_turns < 0:
            raise ValueError(f"AnchorMemConfig.chunk_turns must be >= 0, got {self.chunk_turns}")
        if self.n_neighbors < 1:
            raise ValueError(f"AnchorMemConfig.n_neighbors must be >= 1, got {self.n_neighbors}")
        if not -1.0 <= self.tau <= 1.0:
            raise ValueError(f"AnchorMemConfig.tau must be a cosine similarity in [-1, 1], got {self.tau}")
        if self.extractor not in ("rule", "llm"):
            raise ValueError(f"AnchorMemConfig.extractor must be 'rule' or 'llm', got {self.extractor!r}")
        if self.integrator not in ("auto", "llm", "concat"):
            raise ValueError(f"AnchorMemConfig.integrator must be 'auto', 'llm' or 'concat', got {self.integrator!r}")
        if self.event_turns not in ("facts", "chunks"):
            raise ValueError(f"AnchorMemConfig.event_turns must be 'facts' or 'chunks', got {self.event_turns!r}")
        if self.max_clusters < 0:
            raise ValueError(f"AnchorMemConfig.max_clusters must be >= 0, got {self.max_clusters}")
        if self.item_order not in ("score", "contexts_first"):
            raise ValueError(f"AnchorMemConfig.item_order must be 'score' or 'contexts_first', got {self.item_order!r}")
        if self.top_k < 1:
            raise ValueError(f"AnchorMemConfig.top_k must be >= 1, got {self.top_k}")
