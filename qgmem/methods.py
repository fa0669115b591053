"""Method registry and the answer (generation) step shared by every text-based method.

`make_method(name, ...)` imports a method's module only when it is asked for, so a method whose
module is missing or broken fails alone with a message that names it. `generate_answer` is the
one generation path: serialise the working memory, build the answer prompt, call the answer
backend in phase "generation", parse the final answer line.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from qgmem.llm.base import ChatBackend, LLMError
from qgmem.types import MemoryMethod, Question, WorkingMemory

TEXT_METHODS = ("qgmem-text", "anchormem", "naive-rag", "bm25-turns", "full-context")


class MethodUnavailable(RuntimeError):
    """A method whose implementation cannot be imported or configured."""


def _import(name: str, module: str, attr: str) -> Any:
    import importlib

    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise MethodUnavailable(f"method {name!r} needs {module}.{attr}, which is not available: {e}") from e


def _config(name: str, cls: type, options: dict[str, Any]) -> Any:
    from qgmem.config import from_dict

    return from_dict(cls, dict(options), where=f"method_options.{name}")


def _open_store(store: Any, default_root: Path | None) -> Any:
    if store is not None and not isinstance(store, (str, Path)):
        return store
    root = Path(store) if store is not None else default_root
    if root is None:
        raise MethodUnavailable("this method keeps its memory in a MemoryStore: give store= (a path or a store)")
    from qgmem.store import MemoryStore

    return MemoryStore(root)


def _qgmem_text(store: Any, llm: ChatBackend | None, options: dict[str, Any]) -> MemoryMethod:
    cls = _import("qgmem-text", "qgmem.retrieve.method", "QGMemMethod")
    return cls(store=store, llm=llm, **options)


def _qgmem_graph(store: Any, llm: ChatBackend | None, options: dict[str, Any]) -> MemoryMethod:
    opts = dict(options)
    ckpt = opts.pop("checkpoint", None)
    if not ckpt:
        raise MethodUnavailable("method 'qgmem' needs method_options.qgmem.checkpoint (a trained graph-token model); "
                                "use 'qgmem-text' for the text serialisation without a checkpoint")
    pipeline_cls = _import("qgmem", "qgmem.pipeline", "MemoryPipeline")
    root = getattr(store, "root", store)
    if hasattr(store, "close"):
        store.close()  # the pipeline opens its own store at the same root
    return GraphTokenMethod(pipeline_cls.from_pretrained(ckpt, store_dir=root, **opts))


def _anchormem(store: Any, llm: ChatBackend | None, options: dict[str, Any]) -> MemoryMethod:
    cls = _import("anchormem", "qgmem.anchormem.method", "AnchorMemMethod")
    cfg_cls = _import("anchormem", "qgmem.anchormem.config", "AnchorMemConfig")
    cfg = _config("anchormem", cfg_cls, options)
    wants_llm = cfg.extractor == "llm" or cfg.integrator == "llm"
    return cls(store, cfg, llm=llm if wants_llm else None)


def _naive_rag(store: Any, llm: ChatBackend | None, options: dict[str, Any]) -> MemoryMethod:
    m = _import("naive-rag", "qgmem.baselines.dense_turns", "DenseTurns")(**options)
    m.name = "naive-rag"
    return m


def _bm25(store: Any, llm: ChatBackend | None, options: dict[str, Any]) -> MemoryMethod:
    return _import("bm25-turns", "qgmem.baselines.bm25_turns", "BM25Turns")(**options)


def _full_context(store: Any, llm: ChatBackend | None, options: dict[str, Any]) -> MemoryMethod:
    from qgmem.baselines.full_context import FullContext

    return FullContext(**options)


# name -> (factory, needs a store)
REGISTRY: dict[str, tuple[Callable[[Any, ChatBackend | None, dict[str, Any]], MemoryMethod], bool]] = {
    "qgmem": (_qgmem_graph, True),
    "qgmem-text": (_qgmem_text, True),
    "anchormem": (_anchormem, True),
    "naive-rag": (_naive_rag, False),
    "bm25-turns": (_bm25, False),
    "full-context": (_full_context, False),
}


def make_method(name: str, store: Any = None, llm: ChatBackend | None = None, store_root: str | Path | None = None,
                **options: Any) -> MemoryMethod:
    """A ready MemoryMethod by name. `store` is a MemoryStore or its root (methods that persist
    memory need one; `store_root` is the fallback root); `llm` is the backend used for LLM
    construction/retrieval steps; `options` go to the method's own config."""
    if name not in REGISTRY:
        raise MethodUnavailable(f"unknown method {name!r}; known: {sorted(REGISTRY)}")
    factory, needs_store = REGISTRY[name]
    st = _open_store(store, Path(store_root) if store_root else None) if needs_store else None
    try:
        return factory(st, llm, options)
    except TypeError as e:  # an option the method does not take
        raise MethodUnavailable(f"method {name!r}: bad method_options {sorted(options)}: {e}") from e


class GraphTokenMethod:
    """Adapter: the trained graph-token pipeline (`qgmem.pipeline.MemoryPipeline` with a checkpoint)
    retrieves with the settings it was trained on and answers itself, without the chat backend."""

    name = "qgmem"

    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline

    def build(self, conversation: Any) -> None:
        self.pipeline.add(conversation, namespace=conversation.id)

    def activate(self, question: Question, k: int = 10) -> WorkingMemory:
        return self.pipeline.working_memory(question)

    def answer(self, question: Question, wm: WorkingMemory, max_tokens: int) -> tuple[str, int, int]:
        """(reply text, prompt tokens, completion tokens); the local model reports no token counts (0)."""
        self.pipeline.max_new_tokens = max_tokens
        return self.pipeline.answer(question).raw, 0, 0
