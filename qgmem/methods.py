"""The one list of memory methods: every name a config may use, ablations included.

Each `MethodSpec` says what a method is (one line), which options dataclass its `method_options`
are checked against when a config loads, whether it needs a `MemoryStore`, whether it answers
questions (QA runs) and/or is scored for retrieval (retrieval runs), and how it is made.

QGMem has three roles, three names:

- ``qgmem-activation``: the activation pipeline (channels -> RRF -> rerank -> k units), scored in
  retrieval runs; its options are `RetrievalConfig` fields on top of the run's ``retrieval`` section.
  ``qgmem-no-*`` / ``qgmem-*-only`` are its ablations (a few `RetrievalConfig` fields changed).
- ``qgmem-text``: the same working memory serialised as text (with the local graph as triples) for
  any chat backend, in QA runs.
- ``qgmem-graph-token``: the trained graph-token model answering itself (needs ``checkpoint``).

Baselines: ``bm25-turns`` and ``dense-turns`` (BM25 / MiniLM similarity over raw turns; the latter
was called ``naive-rag`` in QA runs), ``flat-bm25`` / ``flat-bm25-session`` (LongMemEval's own BM25
over user turns / sessions, for its official protocol), ``full-context`` (the transcript cut to a token
budget), and ``anchormem``. Old names fail at load with the name to use instead (`RENAMED`).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping

from qgmem.anchormem.config import AnchorMemConfig
from qgmem.config import ConfigError, from_dict
from qgmem.llm.base import ChatBackend
from qgmem.retrieve.config import RetrievalConfig
from qgmem.types import MemoryMethod, MethodBase, Question, WorkingMemory

Task = Literal["qa", "retrieval"]


class MethodUnavailable(RuntimeError):
    """A method whose implementation cannot be imported or configured."""


@dataclass
class BM25TurnsOptions:
    """BM25 over raw turns has no settings."""


@dataclass
class FlatBM25Options:
    """LongMemEval's own BM25 (`qgmem.baselines.flat_bm25`): which speakers' turns are documents."""

    speakers: list[str] = field(default_factory=lambda: ["user"])  # [] = every turn


@dataclass
class DenseTurnsOptions:
    embedder: str | None = None  # None: the run's retrieval.embedder (packaged MiniLM by default)
    device: str | None = None  # None: the run's retrieval.device


@dataclass
class FullContextOptions:
    max_context_tokens: int = 100_000


@dataclass
class GraphTokenOptions:
    checkpoint: str = ""  # a `GraphTokenLM.save_pretrained` folder (e.g. output_dir/best); required
    k: int | None = None  # working-memory size; None: what the checkpoint was trained with
    device: str | None = None  # None: CUDA, then MPS, then the CPU, whichever is available
    dtype: str | None = None  # of the frozen LLM; None: the dtype the checkpoint records (float32 if none)


@dataclass
class MethodContext:
    """What a run hands every factory: the store, the chat backend for construction/query steps
    (None where the run gives none) and the run's base retrieval settings."""

    store: Any = None  # a MemoryStore, its root, or None
    llm: ChatBackend | None = None
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)


Factory = Callable[[MethodContext, Any], MemoryMethod]


@dataclass(frozen=True)
class MethodSpec:
    name: str
    description: str
    options: type  # the dataclass `method_options.<name>` is checked against
    factory: Factory  # (context, effective options) -> method
    needs_store: bool = False
    answers: bool = True  # usable in QA runs
    retrieves: bool = True  # scored in retrieval runs
    uses_llm: bool = False  # gets the run's chat backend for construction / query parsing
    changes: Mapping[str, Any] = field(default_factory=dict)  # ablation: "a.b" RetrievalConfig fields changed
    required: tuple[str, ...] = ()  # options that must be set for the method to run


def _import(name: str, module: str, attr: str) -> Any:
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise MethodUnavailable(f"method {name!r} needs {module}.{attr}, which is not available: {e}") from e


def _qgmem_activation(ctx: MethodContext, cfg: RetrievalConfig) -> MemoryMethod:
    cls = _import("qgmem-activation", "qgmem.retrieve.method", "QGMemRetriever")
    return cls(ctx.store, cfg, llm=ctx.llm)


def _qgmem_text(ctx: MethodContext, cfg: RetrievalConfig) -> MemoryMethod:
    cls = _import("qgmem-text", "qgmem.retrieve.method", "QGMemRetriever")
    return cls(ctx.store, cfg, llm=ctx.llm, graph_in_memory=True)


def _graph_token(ctx: MethodContext, opts: GraphTokenOptions) -> MemoryMethod:
    pipeline_cls = _import("qgmem-graph-token", "qgmem.pipeline", "MemoryPipeline")
    root = getattr(ctx.store, "root", ctx.store)
    if hasattr(ctx.store, "close"):
        ctx.store.close()  # the pipeline opens its own store at the same root
    return GraphTokenMethod(pipeline_cls.from_pretrained(opts.checkpoint, store_dir=root, k=opts.k, device=opts.device,
                                                         torch_dtype=opts.dtype))


def _anchormem(ctx: MethodContext, cfg: AnchorMemConfig) -> MemoryMethod:
    cls = _import("anchormem", "qgmem.anchormem.method", "AnchorMemMethod")
    wants_llm = cfg.extractor == "llm" or cfg.integrator == "llm"
    return cls(ctx.store, cfg, llm=ctx.llm if wants_llm else None)


def _dense_turns(ctx: MethodContext, opts: DenseTurnsOptions) -> MemoryMethod:
    cls = _import("dense-turns", "qgmem.baselines.dense_turns", "DenseTurns")
    return cls(opts.embedder or ctx.retrieval.embedder, opts.device or ctx.retrieval.device, store=ctx.store)


def _bm25(ctx: MethodContext, opts: BM25TurnsOptions) -> MemoryMethod:
    return _import("bm25-turns", "qgmem.baselines.bm25_turns", "BM25Turns")()


def _flat_bm25(granularity: str) -> Factory:
    def make(ctx: MethodContext, opts: FlatBM25Options) -> MemoryMethod:
        cls = _import(f"flat-bm25 ({granularity})", "qgmem.baselines.flat_bm25", "FlatBM25")
        return cls(granularity, opts.speakers)
    return make


def _full_context(ctx: MethodContext, opts: FullContextOptions) -> MemoryMethod:
    return _import("full-context", "qgmem.baselines.full_context", "FullContext")(opts.max_context_tokens)


def _ablation(name: str, what: str, changes: dict[str, Any]) -> MethodSpec:
    return MethodSpec(name, f"qgmem-activation {what}", RetrievalConfig, _qgmem_activation, needs_store=True,
                      answers=False, uses_llm=True, changes=changes)


_SPECS = [
    MethodSpec("qgmem-activation", "QGMem activation pipeline (channels, RRF, rerank, k units), scored for retrieval",
               RetrievalConfig, _qgmem_activation, needs_store=True, answers=False, uses_llm=True),
    _ablation("qgmem-no-attribute", "without the attribute channel", {"channels": ["lexical", "dense"]}),
    _ablation("qgmem-with-turns", "with the raw-turn channels added",
              {"channels": ["lexical", "dense", "attribute", "turn-lexical", "turn-dense"]}),
    _ablation("qgmem-no-rerank", "without the reranker", {"rerank.kind": "none"}),
    _ablation("qgmem-learned-rank", "with the learned pool ranker (`qgmem train-reranker`, configs/rerank/pool_mlp.yaml)",
              {"rerank.kind": "learned", "rerank.model": "checkpoints/reranker/pool-mlp"}),
    _ablation("qgmem-no-traces", "without memory traces", {"use_traces": False}),
    _ablation("qgmem-no-graph-activation", "without graph activation (entity-centred list, spreading activation)",
              {"graph.enabled": False}),
    _ablation("qgmem-no-context", "without neighbouring turns in the lexical document", {"context_turns": 0}),
    _ablation("qgmem-lexical-only", "with the lexical channel only", {"channels": ["lexical"]}),
    _ablation("qgmem-dense-only", "with the dense channel only", {"channels": ["dense"]}),
    MethodSpec("qgmem-text", "QGMem working memory and local graph serialised as text for a chat backend",
               RetrievalConfig, _qgmem_text, needs_store=True, retrieves=False, uses_llm=True),
    MethodSpec("qgmem-graph-token", "QGMem graph-token model answering itself from a trained checkpoint",
               GraphTokenOptions, _graph_token, needs_store=True, retrieves=False, required=("checkpoint",)),
    MethodSpec("anchormem", "AnchorMem: facts as anchors, immutable context chunks, event graph",
               AnchorMemConfig, _anchormem, needs_store=True, uses_llm=True),
    MethodSpec("bm25-turns", "BM25 over raw turns", BM25TurnsOptions, _bm25),
    MethodSpec("flat-bm25", "LongMemEval's flat BM25 over user turns (space-split, BM25Okapi), retrieval only",
               FlatBM25Options, _flat_bm25("turn"), answers=False),
    MethodSpec("flat-bm25-session", "LongMemEval's flat BM25 over sessions (their user turns joined), retrieval only",
               FlatBM25Options, _flat_bm25("session"), answers=False),
    MethodSpec("dense-turns", "naive RAG: sentence-embedding similarity over raw turns", DenseTurnsOptions,
               _dense_turns, needs_store=True),
    MethodSpec("full-context", "the whole conversation, newest turns kept within a token budget",
               FullContextOptions, _full_context, retrieves=False),
]
REGISTRY: dict[str, MethodSpec] = {s.name: s for s in _SPECS}

# old name -> the name to use now (per task where the old name meant two things)
RENAMED: dict[str, dict[str, str]] = {
    "qgmem": {"qa": "qgmem-graph-token", "retrieval": "qgmem-activation"},
    "naive-rag": {"qa": "dense-turns", "retrieval": "dense-turns"},
}

# what a run config without `methods` runs
DEFAULTS: dict[str, tuple[str, ...]] = {
    "qa": ("qgmem-text", "dense-turns"),
    "retrieval": ("qgmem-activation", "qgmem-no-attribute", "qgmem-no-rerank", "qgmem-no-traces", "bm25-turns",
                  "dense-turns"),
}


def names(task: Task) -> list[str]:
    """Registry names usable in a `task` run."""
    return [s.name for s in REGISTRY.values() if (s.answers if task == "qa" else s.retrieves)]


def spec(name: str, task: Task | None = None, where: str = "methods") -> MethodSpec:
    """The entry of `name`; a ConfigError (one line) for an old or unknown name, or one that cannot run in `task`."""
    if name in RENAMED:
        new = RENAMED[name][task or "qa"]
        raise ConfigError(f"{where}: method {name!r} was renamed: use {new!r}")
    if name not in REGISTRY:
        raise ConfigError(f"{where}: unknown method {name!r}; known: {list(REGISTRY)}")
    s = REGISTRY[name]
    if task == "qa" and not s.answers:
        raise ConfigError(f"{where}: method {name!r} does not answer questions (retrieval runs only); "
                          f"QA methods: {names('qa')}")
    if task == "retrieval" and not s.retrieves:
        raise ConfigError(f"{where}: method {name!r} is not scored in retrieval runs; retrieval methods: {names('retrieval')}")
    return s


def parse_options(name: str, options: Mapping[str, Any], task: Task | None = None) -> Any:
    """`method_options.<name>` as its options dataclass; errors name `method_options.<name>.<key>`."""
    where = f"method_options.{name}"
    s = REGISTRY[name] if name in REGISTRY else spec(name, task, where)  # options of any entry, whatever the task
    if not isinstance(options, Mapping):
        raise ConfigError(f"{where}: expected a mapping of options, got {options!r}")
    known = [f.name for f in dataclasses.fields(s.options)]
    for key in options:
        if key not in known:
            raise ConfigError(f"{where}.{key}: unknown option for {name!r} ({s.options.__name__}); known: {known}")
    try:
        return from_dict(s.options, dict(options), where=where)
    except ConfigError:
        raise
    except (ValueError, TypeError) as e:
        raise ConfigError(f"{where}: {e}") from e


def check_methods(methods: list[str], method_options: Mapping[str, Mapping[str, Any]], task: Task) -> None:
    """Config-load check of a run's `methods` and `method_options` against the registry."""
    if not methods:
        raise ConfigError("methods: give at least one method")
    if len(set(methods)) != len(methods):
        raise ConfigError(f"methods: duplicates in {methods}")
    for name in methods:
        spec(name, task)
    for name, opts in method_options.items():
        parse_options(name, opts, task)
    for name in methods:
        for key in REGISTRY[name].required:
            if not (method_options.get(name) or {}).get(key):
                raise ConfigError(f"method_options.{name}.{key}: required by {name!r}")


def _set(obj: Any, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    for p in parts[:-1]:
        obj = getattr(obj, p)
    setattr(obj, parts[-1], value)


def effective_options(name: str, ctx: MethodContext, options: Mapping[str, Any] | None = None) -> Any:
    """The options a method runs with: its parsed `method_options`; for `RetrievalConfig` methods
    the run's `retrieval` settings with the given keys replaced, then the ablation's changes."""
    s = spec(name)
    raw = dict(options or {})
    parsed = parse_options(name, raw)
    if s.options is not RetrievalConfig:
        return parsed
    cfg = copy.deepcopy(ctx.retrieval)
    for key in raw:
        setattr(cfg, key, getattr(parsed, key))
    for key, val in s.changes.items():
        _set(cfg, key, copy.deepcopy(val))
    return cfg


def _open_store(store: Any) -> Any:
    if store is not None and not isinstance(store, (str, Path)):
        return store
    if store is None:
        raise MethodUnavailable("this method keeps its memory in a MemoryStore: give store= (a path or a store)")
    from qgmem.store import MemoryStore

    return MemoryStore(Path(store))


def make_method(name: str, store: Any = None, llm: ChatBackend | None = None, store_root: str | Path | None = None,
                retrieval: RetrievalConfig | None = None, **options: Any) -> MemoryMethod:
    """A ready MemoryMethod by name. `store` is a MemoryStore or its root (`store_root` the fallback);
    `llm` the backend for construction/query steps; `options` are checked against the method's options dataclass."""
    if name not in REGISTRY and name not in RENAMED:
        raise MethodUnavailable(f"unknown method {name!r}; known: {list(REGISTRY)}")
    s = spec(name)
    ctx = MethodContext(store=None, llm=llm if s.uses_llm else None, retrieval=retrieval or RetrievalConfig())
    opts = effective_options(name, ctx, options)
    for key in s.required:
        if not getattr(opts, key):
            raise MethodUnavailable(f"method {name!r} needs method_options.{name}.{key}")
    if s.needs_store:
        ctx.store = _open_store(store if store is not None else store_root)
    method = s.factory(ctx, opts)
    method.name = name
    return method


def make_methods(methods: list[str], ctx: MethodContext, method_options: Mapping[str, Mapping[str, Any]]
                 ) -> dict[str, MemoryMethod]:
    """name -> method for a run. Names whose factory and effective options are equal (an ablation
    that changes nothing under this run's settings) share one method object, so it runs once."""
    out: dict[str, MemoryMethod] = {}
    made: list[tuple[Factory, Any, MemoryMethod]] = []
    for name in methods:
        s = spec(name)
        opts = effective_options(name, ctx, method_options.get(name))
        same = next((m for f, o, m in made if f is s.factory and o == opts), None)
        if same is None:
            own = dataclasses.replace(ctx, llm=ctx.llm if s.uses_llm else None,
                                      store=ctx.store if s.needs_store else None)
            same = s.factory(own, opts)
            same.name = name
            made.append((s.factory, opts, same))
        out[name] = same
    return out


class GraphTokenMethod(MethodBase):
    """Adapter: the trained graph-token pipeline (`qgmem.pipeline.MemoryPipeline` with a checkpoint)
    retrieves with the settings it was trained on and answers itself, without the chat backend."""

    name = "qgmem-graph-token"
    answers_itself = True

    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline

    def build(self, conversation: Any) -> None:
        self.pipeline.add(conversation, namespace=conversation.id)

    def activate(self, question: Question, k: int = 10) -> WorkingMemory:
        return self.pipeline.working_memory(question)

    def answer(self, question: Question, wm: WorkingMemory, max_tokens: int) -> tuple[str, int, int]:
        """(reply text, prompt tokens, completion tokens) from the working memory the run activated (the
        one it records), not a second retrieval, through the pipeline's own `generate` (so its graph tokens
        are those of `MemoryPipeline.answer`); the local model reports no token counts (0)."""
        return self.pipeline.generate(wm, max_new_tokens=max_tokens), 0, 0
