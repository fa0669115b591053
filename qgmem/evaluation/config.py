"""What one evaluation run does: benchmark, question subset, methods, answer and judge backends."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from qgmem.llm.config import LLMConfig

BENCHMARKS = ("locomo", "longmemeval-s", "longmemeval-oracle", "beam-128k", "beam-500k",
              "factconsolidation-sh", "factconsolidation-mh", "convomem")
METHODS = ("qgmem", "qgmem-text", "anchormem", "naive-rag", "bm25-turns", "full-context")


@dataclass
class SubsetConfig:
    """A reproducible subset. Empty/0 means "all". Sampling within a conversation and category is
    seeded; the questions keep their benchmark order."""

    conversations: list[str] = field(default_factory=list)  # conversation ids to keep
    max_conversations: int = 0  # first N conversations (after `conversations`)
    categories: list[str] = field(default_factory=list)
    per_category: int = 0  # at most this many questions per (conversation, category)
    per_category_overrides: dict[str, int] = field(default_factory=dict)  # e.g. {"5": 3}
    max_questions: int = 0  # cap on the total, after the rest (seeded sample)
    seed: int = 0


@dataclass
class JudgeConfig:
    enabled: bool = False
    llm: LLMConfig = field(default_factory=LLMConfig)
    repeats: int = 3  # n judge runs per question, reported as mean ± std
    parse_retries: int = 2  # repair turns for an unparseable reply before the run counts as FAILED
    max_tokens: int = 128


@dataclass
class CoverageConfig:
    """Semantic coverage of the answer against reference facts, via entailment prompts on the judge."""

    enabled: bool = False
    method: str = "judge-entailment"


@dataclass
class AnswerConfig:
    llm: LLMConfig = field(default_factory=LLMConfig)
    max_tokens: int = 64
    max_context_tokens: int = 0  # cut the memory text shown to the answer model (0 = never); cuts are counted
    batch_size: int = 8  # questions answered per batch (local model: one padded batch; HTTP: concurrent calls)
    with_graph: bool = True  # qgmem-text: append the local graph as triples


@dataclass
class EvalConfig:
    task: str = "qa"  # "qa" here; "retrieval" configs are dispatched to qgmem.evaluation.retrieval
    benchmark: str = "locomo"
    data_dir: str | None = None  # benchmark data root; None = $QGMEM_DATA_DIR
    data_options: dict[str, Any] = field(default_factory=dict)  # extra loader keywords (e.g. split)
    subset: SubsetConfig = field(default_factory=SubsetConfig)
    methods: list[str] = field(default_factory=lambda: ["qgmem-text", "naive-rag"])
    method_options: dict[str, dict[str, Any]] = field(default_factory=dict)  # per method name, kwargs
    k: int = 10
    answer: AnswerConfig = field(default_factory=AnswerConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    coverage: CoverageConfig = field(default_factory=CoverageConfig)
    bootstrap_resamples: int = 10_000
    seed: int = 0
    output_dir: str = "results"
    run_name: str | None = None  # resume (or name) this run
    store_dir: str | None = None  # persistent memory store root; None = one inside the run folder
    retrieval_token_budget: int = 1000  # budget for recall-at-token-budget

    def __post_init__(self) -> None:
        if self.task != "qa":
            raise ValueError(f"EvalConfig.task: {self.task!r}; only 'qa' runs here ('retrieval' is dispatched)")
        if self.benchmark not in BENCHMARKS:
            raise ValueError(f"EvalConfig.benchmark: {self.benchmark!r} is not one of {list(BENCHMARKS)}")
        if not self.methods:
            raise ValueError("EvalConfig.methods: give at least one method")
        bad = [m for m in self.methods if m not in METHODS]
        if bad:
            raise ValueError(f"EvalConfig.methods: unknown {bad}; known: {list(METHODS)}")
        if len(set(self.methods)) != len(self.methods):
            raise ValueError(f"EvalConfig.methods: duplicates in {self.methods}")
        if self.k < 1:
            raise ValueError(f"EvalConfig.k must be >= 1, got {self.k}")
        if self.judge.repeats < 1:
            raise ValueError(f"EvalConfig.judge.repeats must be >= 1, got {self.judge.repeats}")
        if self.coverage.enabled and not self.judge.enabled:
            raise ValueError("EvalConfig.coverage.enabled needs judge.enabled (coverage runs on the judge backend)")
        if self.coverage.method != "judge-entailment":
            raise ValueError(f"EvalConfig.coverage.method: {self.coverage.method!r}; only 'judge-entailment' exists")
