"""What one evaluation run does: benchmark, question subset, methods, answer and judge backends
(`EvalConfig`, task "qa") or retrieval scoring (`RetrievalBenchConfig`, task "retrieval").

Both share `SubsetConfig`, the output layout ``<output_dir>/<benchmark>/<run>``, the resume rule
(`RESUME_KEYS` must match) and the method check against the one registry, `qgmem.methods.REGISTRY`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from qgmem import methods as registry
from qgmem.config import ConfigError
from qgmem.llm.config import LLMConfig
from qgmem.retrieve.config import RetrievalConfig
from qgmem.sharding import parse_shard

BENCHMARKS = ("locomo", "longmemeval-s", "longmemeval-oracle", "beam-128k", "beam-500k",
              "factconsolidation-sh", "factconsolidation-mh", "convomem", "convomem-cases")


@dataclass
class SubsetConfig:
    """A reproducible subset. Empty/0 means "all". Sampling within a conversation and category is
    seeded; the questions keep their benchmark order."""

    conversations: list[str] = field(default_factory=list)  # conversation ids to keep
    exclude_conversations: list[str] = field(default_factory=list)  # ids never scored (e.g. the dev/tuning split)
    max_conversations: int = 0  # first N conversations (after `conversations` and `exclude_conversations`)
    categories: list[str] = field(default_factory=list)
    per_category: int = 0  # at most this many questions per (conversation, category)
    per_category_overrides: dict[str, int] = field(default_factory=dict)  # e.g. {"5": 3}
    max_questions: int = 0  # cap on the total, after the rest (seeded sample)
    seed: int = 0
    conversation_sample: str = "first"  # max_conversations keeps the "first" N, or a "seeded" sample of N

    def __post_init__(self) -> None:
        if self.conversation_sample not in ("first", "seeded"):
            raise ConfigError(f"subset.conversation_sample: {self.conversation_sample!r}; use 'first' or 'seeded'")
        counts = {"max_conversations": self.max_conversations, "per_category": self.per_category,
                  "max_questions": self.max_questions,
                  **{f"per_category_overrides.{k}": v for k, v in self.per_category_overrides.items()}}
        bad = {k: v for k, v in counts.items() if not isinstance(v, int) or v < 0}
        if bad:
            raise ConfigError(f"subset: counts must be whole numbers >= 0 (0 = all), got {bad}")


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
    with_graph: bool = True  # methods with graph_in_memory (qgmem-text) append the local graph as triples


@dataclass
class EvalConfig:
    task: str = "qa"  # "qa" here; "retrieval" configs are dispatched to qgmem.evaluation.retrieval
    benchmark: str = "locomo"
    data_dir: str | None = None  # benchmark data root; None = $QGMEM_DATA_DIR
    data_options: dict[str, Any] = field(default_factory=dict)  # extra loader keywords (e.g. split)
    subset: SubsetConfig = field(default_factory=SubsetConfig)
    methods: list[str] = field(default_factory=lambda: list(registry.DEFAULTS["qa"]))
    method_options: dict[str, dict[str, Any]] = field(default_factory=dict)  # per method name, its options dataclass
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

    # fields that must match for a run to be resumed: what decides the answers and scores (batch sizes,
    # concurrency, timeouts, output_dir may change between the interrupted and the resumed run)
    RESUME_KEYS: ClassVar[tuple[str, ...]] = (
        "task", "benchmark", "data_dir", "data_options", "subset", "methods", "method_options", "k",
        "answer.llm.backend", "answer.llm.model", "answer.llm.base_url", "answer.max_tokens", "answer.with_graph",
        "answer.max_context_tokens", "judge.enabled", "judge.llm.backend", "judge.llm.model", "judge.repeats", "coverage")

    def __post_init__(self) -> None:
        if self.task != "qa":
            raise ValueError(f"EvalConfig.task: {self.task!r}; only 'qa' runs here ('retrieval' is dispatched)")
        if self.benchmark not in BENCHMARKS:
            raise ValueError(f"EvalConfig.benchmark: {self.benchmark!r} is not one of {list(BENCHMARKS)}")
        registry.check_methods(self.methods, self.method_options, "qa")
        if self.k < 1:
            raise ValueError(f"EvalConfig.k must be >= 1, got {self.k}")
        if self.judge.repeats < 1:
            raise ValueError(f"EvalConfig.judge.repeats must be >= 1, got {self.judge.repeats}")
        if self.coverage.enabled and not self.judge.enabled:
            raise ValueError("EvalConfig.coverage.enabled needs judge.enabled (coverage runs on the judge backend)")
        if self.coverage.method != "judge-entailment":
            raise ValueError(f"EvalConfig.coverage.method: {self.coverage.method!r}; only 'judge-entailment' exists")


@dataclass
class RetrievalBenchConfig:
    """A retrieval run: every method's working memory scored against gold evidence turns."""

    task: str = "retrieval"
    benchmark: str = "locomo"  # "locomo" | "longmemeval-s" (any registry name with gold evidence)
    data_dir: str | None = None  # default $QGMEM_DATA_DIR
    data_options: dict[str, Any] = field(default_factory=dict)
    subset: SubsetConfig = field(default_factory=SubsetConfig)
    dev_conversations: list[str] = field(default_factory=list)  # tuning split; also reported separately
    k: int = 10
    token_budget: int = 600
    methods: list[str] = field(default_factory=lambda: list(registry.DEFAULTS["retrieval"]))
    method_options: dict[str, dict[str, Any]] = field(default_factory=dict)  # e.g. {"anchormem": {"tau": 0.85}}
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)  # base settings of QGMem and dense-turns
    output_dir: str = "results"
    run_name: str | None = None  # resume (or name) this run
    store_dir: str | None = None  # persistent memory store root; None = one inside the run folder
    # "I/N": score only the conversations of shard I of N (qgmem.sharding), into run <run_name>.shard-I-of-N
    # with the store <store_dir>.shard-I-of-N (what `qgmem build --shard I/N` wrote); `qgmem merge-runs` joins them
    shard: str | None = None
    # which conversations a shard holds: "hash" (sha256 of the id mod N: the rule `qgmem build --shard` uses, so an
    # evaluation shard reads its build shard's store) or "position" (the selection's i-th conversation goes to shard
    # i mod N: balanced to one conversation; `workers: N` uses it, each worker building its own store)
    shard_by: str = "hash"
    # processes scoring shards side by side on this machine (qgmem.evaluation.workers), cores // workers threads each;
    # their shard runs are merged into this run
    workers: int = 1
    # how LongMemEval is scored: "official" (its run_retrieval.py: user turns as corpus, noans renaming, its skips,
    # metrics at 1..50; `qgmem.evaluation.lme_official`), reported first, with the "all-turns" tables after it; or
    # "all-turns" alone (every turn indexed and gold, all roles). None: "official" on LongMemEval, "all-turns" elsewhere
    protocol: str | None = None
    # items asked of each method for the official ranking; 0 = as many as the conversation has turns (the whole
    # ranking: session metrics read down the turns until 50 distinct sessions)
    official_depth: int = 0

    RESUME_KEYS: ClassVar[tuple[str, ...]] = ("task", "benchmark", "data_dir", "data_options", "subset", "methods",
                                               "method_options", "k", "token_budget", "retrieval", "shard", "shard_by", "workers",
                                               "protocol", "official_depth")

    def __post_init__(self) -> None:
        if self.task != "retrieval":
            raise ValueError(f"RetrievalBenchConfig.task: {self.task!r}; only 'retrieval' runs here")
        if self.benchmark not in BENCHMARKS:
            raise ValueError(f"RetrievalBenchConfig.benchmark: {self.benchmark!r} is not one of {list(BENCHMARKS)}")
        registry.check_methods(self.methods, self.method_options, "retrieval")
        if self.k < 1:
            raise ValueError(f"RetrievalBenchConfig.k must be >= 1, got {self.k}")
        if self.shard is not None:
            parse_shard(str(self.shard), "RetrievalBenchConfig.shard")
        if self.shard_by not in ("hash", "position"):
            raise ValueError(f"RetrievalBenchConfig.shard_by: {self.shard_by!r} is not 'hash' or 'position'")
        if self.workers < 1:
            raise ValueError(f"RetrievalBenchConfig.workers must be >= 1, got {self.workers}")
        lme = self.benchmark.startswith("longmemeval")
        if self.protocol is None:
            self.protocol = "official" if lme else "all-turns"
        if self.protocol not in ("official", "all-turns"):
            raise ValueError(f"RetrievalBenchConfig.protocol: {self.protocol!r} is not 'official' or 'all-turns'")
        if self.protocol == "official" and not lme:
            raise ValueError(f"RetrievalBenchConfig.protocol: 'official' is LongMemEval's protocol; {self.benchmark} "
                             "is scored over all turns (protocol: all-turns)")
        if self.official_depth < 0:
            raise ValueError(f"RetrievalBenchConfig.official_depth must be >= 0, got {self.official_depth}")


# keys of the retrieval config before the harnesses shared one layout -> where they went
MOVED = {"dataset": "benchmark", "categories": "subset.categories", "conversations": "subset.conversations",
         "max_conversations": "subset.max_conversations (with subset.conversation_sample: seeded)",
         "subset_seed": "subset.seed", "resume": "--resume or run_name (a new run starts otherwise)"}
