"""Retrieval configuration: one dataclass, loadable from YAML with overrides."""

from __future__ import annotations

from dataclasses import dataclass, field

from qgmem.llm.config import LLMConfig


@dataclass
class RerankConfig:
    kind: str = "none"  # "none" | "learned" (MLP over pool features) | "cross-encoder" | "llm" (yes/no logits, local causal LM) | "chat" (yes/no via a ChatBackend)
    model: str = ""  # ranker folder, cross-encoder or causal LM name/path; "smollm2" resolves to the local copy
    top_n: int = 100  # rerank at most this many pool candidates (the rest keep fusion order below them)
    batch_size: int = 16
    max_length: int = 512  # tokens per (query, document) pair
    instruction: str = "Given a question about a long conversation, judge whether the memory helps answer it"
    weight: float = 1.0  # final score = weight * rerank score + (1 - weight) * normalised fusion score
    device: str | None = None


@dataclass
class GraphActivationConfig:
    """Graph activation settings; the defaults are what the dev split chose (bench/RESULTS.md, "Graph
    activation"); `qgmem/retrieve/activation_graph.py` says what each part does."""

    enabled: bool = True
    person_weight: float = 0.25  # RRF weight of the entity-centred list for a question about a person
    person_weight_aggregate: float = 1.0  # ... when the question aggregates ("what sports does X play?")
    person_depth: int = 100  # length of that ranked list
    name_weight: float = 0.5  # that list ranks by the question's vector minus this x the person's name vector
    self_speaker: str = "user"  # whom a first-person question is about, when the memory has that speaker
    edges: list[str] = field(default_factory=lambda: ["entity", "relation"])  # keys the activation spreads over
    spread_weight: float = 0.0  # activation's weight against the max-normalised fusion score (all questions)
    spread_weight_aggregate: float = 0.1  # ... for questions that aggregate
    seeds: int = 20  # first pool units whose scores spread
    max_key_units: int = 5000  # a key shared by more units spreads nothing (its weight is ~0 anyway)


DEV_WEIGHTS = {"lexical": 1.5, "attribute": 0.5, "turn-lexical": 0.5, "turn-dense": 0.5}

# keys older checkpoints stored that no longer mean anything (dropped when a checkpoint loads)
RETIRED_KEYS = {"token_counter"}  # context tokens: qgmem.answer.count_tokens, one counter for every method


@dataclass
class RetrievalConfig:
    # sentence-transformers name or path ("minilm" = the packaged all-MiniLM-L6-v2), inputs cut at the 128 word
    # pieces it was trained on (chosen on the dev split), in float32 on every CPU: one default, one set of
    # numbers. `minilm@128:auto` (bf16 where the CPU or GPU has native bf16 units, ~3x faster to build a memory,
    # vectors within 1e-4 cosine) is the opt-in for speed; the run's meta records which precision ran
    embedder: str = "minilm@128"
    device: str | None = None
    # unit channels (lexical, dense, event-attribute); the raw-turn channels (turn-lexical, turn-dense) are
    # available but off: on the test side of LoCoMo and LongMemEval-S they did not earn their place
    channels: list[str] = field(default_factory=lambda: ["lexical", "dense", "attribute"])
    # RRF weight per channel (1 when unnamed); chosen on the dev split (LoCoMo conv-26/30, LongMemEval-S dev 20)
    channel_weights: dict[str, float] = field(default_factory=lambda: dict(DEV_WEIGHTS))
    channel_depth: int = 100  # ranked list length per channel
    rrf_k: int = 30  # (the RRF paper's 60 was chosen on web search; 30 on our dev split)
    pool_size: int = 100
    k: int = 10
    attr_threshold: float = 0.60  # entity/location dense-similarity threshold (paper)
    attr_time_fallback_utterance: bool = True  # units without a fact time match on their utterance time
    attr_max_df_share: float = 1.0  # names found in more than this share of units are no constraint
    attr_max_matches: int = 2000  # cap on units an attribute channel scores per query
    query_parser: str = "rule"  # "rule" | "llm"
    llm: LLMConfig = field(default_factory=LLMConfig)  # used by the LLM query parser and the chat reranker
    rerank: RerankConfig = field(default_factory=RerankConfig)
    graph: GraphActivationConfig = field(default_factory=GraphActivationConfig)  # graph activation (issue 26)
    use_traces: bool = True  # trajectories in candidate documents and working memory
    state_order: bool = True  # "now" questions see a trace's latest state first, "when did" ones its update
    index_source: bool = True  # index the source dialogue span together with the claim
    context_turns: int = 2  # neighbouring turns on each side added to the lexical document
    context_chars: int = 300  # each neighbouring turn cut to this many characters (0: whole)
    # the dense document: claim, source span and one neighbouring turn on each side (each cut to context_chars),
    # as the model reads it (its first 128 word pieces). A short remark ("they loved it") is embedded with what
    # it answers. LoCoMo dev Recall@10 / nDCG@10 0.849 / 0.640 against 0.816 / 0.632 for the claim alone, 0.810 /
    # 0.618 with the span but no neighbour, 0.844 / 0.641 with two; LongMemEval-S dev 20: official turn
    # recall_all@10 0.923 either way (2026-12-02). Off (False / 0): the claim alone, cheaper to embed
    dense_source: bool = True  # the dense document holds the source span too
    dense_context_turns: int = 1  # neighbouring turns on each side in the dense document (with dense_source)
    lexical_max_postings: int = 5000  # per query term, highest-impact first (0 = exact BM25; exact below this df)
    ann_threshold: int = 50_000  # dense channel switches from exact search to FAISS HNSW above this many units
    hnsw_m: int = 32
    hnsw_ef_construction: int = 80
    hnsw_ef_search: int = 128
    dense_compress_above: int = 1_000_000  # above this many units the dense channel keeps FAISS IVF codes, not float32
    ivf_codec: str = "SQ8"  # FAISS code of a compressed vector (SQ8: 1 byte per dimension, ~0.4 KB per 384-d unit)
    ivf_nlist: int = 0  # coarse cells of the compressed index; 0 = 4 * sqrt(units) within [64, 4096]
    ivf_nprobe: int = 64  # cells scanned per query (recall against build and query time)
    ivf_train_size: int = 0  # vectors sampled to train the cells; 0 = 40 per cell
    max_query_chars: int = 2000  # longer questions are cut (and flagged in the working memory meta)
    extractor: str = "rule"  # construction: "rule" | "llm"
    allow_partial: bool = False  # serve a memory whose build left windows unextracted (reports must say so)
