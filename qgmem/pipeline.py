"""Memory in, answers out: the whole QGMem inference path behind three calls.

    pipe = MemoryPipeline.from_pretrained("checkpoints/smollm2_cpu/best")   # graph token + frozen LM
    pipe = MemoryPipeline.from_pretrained(None, llm=make_backend(cfg))      # any ChatBackend, text only
    ans = pipe.add(conversation_or_sessions, namespace="alice").answer("Where does Alice work now?")
    ans.text, ans.cited_labels, ans.working_memory

With a checkpoint, the working memory is built with the same retrieval and graph settings the
encoder was trained on (stored in the checkpoint), and the answer comes from `GraphTokenLM.generate`
(graph token + serialised memory). Without one, the memory and its local graph are serialised
as text for the chat backend (the API-backbone path of QGMem §IV). Cited labels are those of
the answer that name an item of the working memory; others are reported as `invalid_labels`.

The store is the source of truth: a pipeline opened on an existing `store_dir` serves every
namespace in it without `add()`; `add()` merges sessions into what is stored (a session with a known
id replaces the stored one, so a grown or edited session updates exactly its changed windows);
`forget()` removes a namespace, a session or turns with everything derived from them. A namespace
whose build left windows unextracted is refused unless the pipeline was opened with `allow_partial`.
"""

from __future__ import annotations

import dataclasses
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qgmem.config import from_dict
from qgmem.construct.build import MemoryIncomplete
from qgmem.graph.local_graph import GraphConfig
from qgmem.llm.base import ChatBackend
from qgmem.model.collate import GraphExample
from qgmem.model.inputs import InputConfig, build_example
from qgmem.retrieve.config import RETIRED_KEYS, RetrievalConfig
from qgmem.types import AtomicUnit, Conversation, Question, Session, WorkingMemory


@dataclass
class Answer:
    text: str  # the short answer (the "Answer:" line)
    cited_labels: list[str]  # labels cited in the reply that exist in `working_memory`
    working_memory: WorkingMemory
    raw: str = ""  # the full reply
    invalid_labels: list[str] = field(default_factory=list)  # cited labels naming no memory item


@dataclass
class InferenceSettings:
    """What a checkpoint fixes for inference: how memories are retrieved and turned into input."""

    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    inputs: InputConfig = field(default_factory=InputConfig)
    k: int = 10  # working-memory size


def inference_settings(prepare: dict[str, Any] | None, where: str = "extra.prepare") -> InferenceSettings:
    """The inference settings in a prepare config dict (a checkpoint's ``extra.prepare``, or
    ``config`` of a prepared set's prepare_meta.json). Reads only the keys inference needs, so
    both today's prepare config and the one of qgmem 0.1.0 (which also had its own ``k``) load."""
    d = dict(prepare or {})
    stored = {k: v for k, v in dict(d.get("retrieval") or {}).items() if k not in RETIRED_KEYS}
    retrieval = from_dict(RetrievalConfig, stored, f"{where}.retrieval")
    graph = from_dict(GraphConfig, dict(d.get("graph") or {}), f"{where}.graph")
    k = int(d["k"]) if d.get("k") is not None else retrieval.k  # 0.1.0 stored k next to retrieval
    return InferenceSettings(retrieval=retrieval, inputs=InputConfig(graph=graph,
                             text_with_graph=bool(d.get("text_with_graph", False))), k=k)


class MemoryPipeline:
    """One store of memories (a namespace per user/conversation) + one answerer."""

    def __init__(self, *, model: Any = None, llm: ChatBackend | None = None, store_dir: str | Path | None = None,
                 retrieval: RetrievalConfig | None = None, inputs: InputConfig | None = None, k: int = 10,
                 max_length: int = 2048, max_new_tokens: int = 64, system: str | None = None,
                 allow_partial: bool = False):
        from qgmem.retrieve.method import QGMemRetriever
        from qgmem.store import MemoryStore

        if model is None and llm is None:
            raise ValueError("MemoryPipeline needs a GraphTokenLM (model=) or a ChatBackend (llm=)")
        if model is not None:
            model.eval()  # inference: the encoder's dropout never fires (generate and graph_tokens rely on it)
        self.model, self.llm = model, llm
        self.retrieval = retrieval or RetrievalConfig()
        self.inputs = inputs or InputConfig()
        self.k, self.max_length, self.max_new_tokens = k, max_length, max_new_tokens
        self._tmp = None
        if store_dir is None:  # a throwaway memory: removed by close() or when the pipeline is collected
            self._tmp = tempfile.TemporaryDirectory(prefix="qgmem-pipeline-")
            store_dir = self._tmp.name
        self.store = MemoryStore(store_dir)
        self.retriever = QGMemRetriever(self.store, self.retrieval, llm=llm if self._llm_for_retrieval() else None)
        self.allow_partial = allow_partial
        self._indexed: set[str] = set()  # namespaces whose retrieval index is current in this process
        self.system = system  # the answer prompt's system message (None = the default one)
        self._collator = model.make_collator(max_length, mode="generate", system=system) if model is not None else None

    def close(self) -> None:
        self.store.close()
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> "MemoryPipeline":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _llm_for_retrieval(self) -> bool:
        return self.retrieval.query_parser == "llm" or self.retrieval.rerank.kind == "chat" \
            or self.retrieval.extractor == "llm"

    @classmethod
    def from_pretrained(cls, checkpoint: str | Path | None = None, llm: Any = None, *,
                        store_dir: str | Path | None = None, retrieval: RetrievalConfig | None = None,
                        k: int | None = None, max_new_tokens: int = 64, device: str | None = None,
                        torch_dtype: Any = None) -> "MemoryPipeline":
        """`checkpoint`: a `GraphTokenLM.save_pretrained` folder (e.g. output_dir/best) or None.

        With a checkpoint, `llm` may be a preloaded causal LM (else the base model named in the
        checkpoint is loaded, in the dtype it was trained in, on CUDA, MPS or the CPU, whichever comes
        first: `device` and `torch_dtype`, e.g. "cpu" and "float32", choose otherwise). The model is
        in eval mode. Without one, `llm` is a ChatBackend or an LLMConfig (default: the local SmolLM2
        backend through `qgmem.llm.make_backend`).
        """
        if checkpoint is None:
            from qgmem.llm import LLMConfig, make_backend

            if llm is None or isinstance(llm, LLMConfig):
                llm = make_backend(llm or LLMConfig())
            if not isinstance(llm, ChatBackend):
                raise TypeError(f"without a checkpoint, llm must be a ChatBackend or LLMConfig, got {type(llm).__name__}")
            return cls(llm=llm, store_dir=store_dir, retrieval=retrieval, k=k or 10, max_new_tokens=max_new_tokens,
                       inputs=InputConfig(text_with_graph=True))
        ck = Path(checkpoint)
        model = _load_model(ck, llm, device, torch_dtype)
        extra = dict(getattr(model, "extra", {}) or {})
        st = inference_settings(extra.get("prepare"), f"{ck}: extra.prepare")
        if model.graph_cfg is not None:  # the graphs the encoder was trained on
            st.inputs.graph = model.graph_cfg
        return cls(model=model, store_dir=store_dir, retrieval=retrieval or st.retrieval, inputs=st.inputs,
                   k=k or st.k, max_length=int(extra.get("max_length", 2048)), max_new_tokens=max_new_tokens,
                   system=extra.get("system"))

    # -- memory -----------------------------------------------------------------------------
    def add(self, conversation: Conversation | list[Session], namespace: str | None = None) -> "MemoryPipeline":
        """Add a conversation (or sessions of one) to `namespace` (default: the conversation id, or
        "default" for a list of sessions); returns the pipeline, so calls chain.

        Stored sessions stay; a given session whose id is stored replaces it (grown or edited), new
        ones are appended. Only windows whose turns changed are extracted again.
        """
        if isinstance(conversation, Conversation):
            ns = namespace or conversation.id
            sessions, speakers = list(conversation.sessions), list(conversation.speakers)
        elif isinstance(conversation, list) and all(isinstance(s, Session) for s in conversation):
            ns = namespace or "default"
            sessions, speakers = list(conversation), []
        else:
            raise TypeError(f"add() takes a Conversation or a list of Session, got {type(conversation).__name__}")
        old = self._stored(ns)
        if old is not None:
            given = {s.id: s for s in sessions}
            sessions = [given.pop(s.id, s) for s in old.sessions] + list(given.values())
            speakers = list(dict.fromkeys(list(old.speakers) + speakers))
        self._index(Conversation(id=ns, sessions=sessions, speakers=speakers))
        return self

    def _stored(self, ns: str) -> Conversation | None:
        try:
            return self.store.get_conversation(ns)
        except KeyError:
            return None

    def _index(self, conv: Conversation) -> None:
        """Bring the stored memory of `conv` up to date (with the settings it was built with, when it
        was) and (re)index it for retrieval."""
        from qgmem.construct.build import BuildConfig, BuildReport, build_memory, stored_config

        report = BuildReport()
        cfg = stored_config(self.store, conv.id) or BuildConfig(extractor=self.retrieval.extractor)
        units, traces = build_memory(conv, extractor=cfg.extractor, store=self.store, config=cfg, report=report,
                                     llm=self.llm if cfg.extractor == "llm" else None)
        self.retriever.index_units(conv, units, traces, namespace=conv.id)
        self._indexed.add(conv.id)
        if report.incomplete and not self.allow_partial:
            self._indexed.discard(conv.id)
            raise MemoryIncomplete.from_report(conv.id, report)

    def _serve(self, ns: str) -> None:
        """Index a namespace as it is stored (built by another process or run): reading never rebuilds,
        so opening a store to query it cannot re-extract its memory with other settings."""
        from qgmem.construct.build import is_complete

        if not is_complete(self.store, ns) and not self.allow_partial:
            first = next((f["error"] for f in self.store.failures(ns)), "?")
            raise MemoryIncomplete(ns, "its last build did not finish", first)
        self.retriever.index_units(self.store.get_conversation(ns), self.store.units(ns), self.store.traces(ns),
                                   namespace=ns)
        self._indexed.add(ns)

    def namespaces(self) -> list[str]:
        """Every namespace with a stored conversation, this process's additions or not."""
        return self.store.namespaces(with_conversation=True)  # not parsed: every question asks

    def forget(self, namespace: str, session_id: str | None = None, turn_ids: list[str] | None = None
               ) -> "MemoryPipeline":
        """Forget a namespace, one session of it, or some turns, with every record derived from them."""
        from qgmem.construct.forget import forget

        if namespace not in self.namespaces():
            raise KeyError(f"namespace {namespace!r} is not in this store (have {self.namespaces()})")
        self.retriever.release(namespace)
        self._indexed.discard(namespace)
        forget(self.store, namespace, session_id, turn_ids, llm=self.llm if self.retrieval.extractor == "llm" else None)
        return self

    def history(self, unit_id: str) -> list[AtomicUnit]:
        """The trace of a unit: every state of its (subject, relation) in memory-time order, each
        with its role and whether it is superseded; just the unit when it has no trace."""
        ns = unit_id.rsplit("/", 2)[0]  # unit ids are <namespace>/<session>#w<i>/u<j>
        units = {u.id: u for u in self.store.units(ns)}
        if unit_id not in units:
            raise KeyError(f"no unit {unit_id!r} in namespace {ns!r}")
        for t in self.store.traces(ns):
            if unit_id in t.unit_ids:
                return [units[i] for i in t.unit_ids]
        return [units[unit_id]]

    def working_memory(self, question: str | Question, namespace: str | None = None) -> WorkingMemory:
        q = self._question(question, namespace)
        return self.retriever.activate(q, k=self.k)

    def _question(self, question: str | Question, namespace: str | None) -> Question:
        if isinstance(question, Question):
            ns = namespace or question.conversation_id
            q = dataclasses.replace(question, conversation_id=ns) if ns else question
        else:
            ns = namespace
            q = Question(id=f"q-{uuid.uuid4().hex[:8]}", text=str(question), answers=[], category="",
                         conversation_id=ns or "")
        have = self.namespaces()
        if not q.conversation_id:
            if len(have) != 1:
                raise ValueError(f"namespace required: this pipeline holds {have}")
            q = dataclasses.replace(q, conversation_id=have[0])
        if q.conversation_id not in have:
            raise KeyError(f"namespace {q.conversation_id!r} has no memories; add() it first (have {have})")
        if q.conversation_id not in self._indexed:  # stored by another process or an earlier run
            self._serve(q.conversation_id)
        return q

    # -- answers ----------------------------------------------------------------------------
    def example(self, question: str | Question, namespace: str | None = None) -> tuple[WorkingMemory, GraphExample]:
        """The working memory of `question` and the model example built from it (`model_example`)."""
        q = self._question(question, namespace)
        wm = self.retriever.activate(q, k=self.k)
        return wm, self.model_example(wm)

    def model_example(self, wm: WorkingMemory) -> GraphExample:
        """The model example of a working memory: the same `build_example` step that prepared the training
        data, with the checkpoint's graph settings; `answer`, `graph_tokens` and the `qgmem-graph-token`
        method of evaluation runs all build their input here."""
        emb = self.retriever.embedder
        return build_example(wm, emb.encode, self.inputs, embed_dim=emb.dim)

    def generate(self, wm: WorkingMemory, max_new_tokens: int | None = None) -> str:
        """The checkpoint model's reply to a working memory (greedy, eval mode)."""
        if self.model is None:
            raise ValueError("generate() needs a graph-token checkpoint; this pipeline answers through a ChatBackend")
        return self._generate(self.model_example(wm), max_new_tokens)

    def _generate(self, ex: GraphExample, max_new_tokens: int | None = None) -> str:
        return self.model.generate(self._collator([ex]), max_new_tokens=max_new_tokens or self.max_new_tokens)[0]

    def graph_tokens(self, question: str | Question | WorkingMemory, namespace: str | None = None) -> Any:
        """The graph tokens ``[num_graph_tokens, llm_hidden]`` (float32, on the CPU) that the answer to
        `question` (or to a given working memory) reads: `GraphTokenLM.graph_tokens` of its example, the
        function validation's loss goes through too."""
        import torch

        if self.model is None:
            raise ValueError("graph_tokens() needs a graph-token checkpoint")
        wm = question if isinstance(question, WorkingMemory) else self.working_memory(question, namespace)
        with torch.no_grad():
            return self.model.graph_tokens(self._collator([self.model_example(wm)]))[0].cpu()

    def answer(self, question: str | Question, namespace: str | None = None) -> Answer:
        from qgmem.answer import answer_messages, parse_answer

        q = self._question(question, namespace)
        wm, ex = self.example(q)
        if self.model is not None:
            raw = self._generate(ex)
        else:
            raw = self.llm.chat(answer_messages(q, ex.memory_text, system=self.system), temperature=0.0,
                                max_tokens=self.max_new_tokens, phase="generation").text
        ans, labels = parse_answer(raw)
        known = {it.label for it in wm.items}
        return Answer(text=ans, cited_labels=[lab for lab in labels if lab in known], working_memory=wm, raw=raw,
                      invalid_labels=[lab for lab in labels if lab not in known])


def _load_model(ck: Path, llm: Any, device: str | None, torch_dtype: Any):
    """GraphTokenLM from a checkpoint, in eval mode; the base LLM named there goes through
    `local_model_path` (so "smollm2" resolves to the packaged copy) and loads in the dtype the checkpoint
    records (float32 when it records none) on the best available device (`qgmem.model.placement`),
    unless `device` / `torch_dtype` say otherwise. A preloaded `llm` keeps its dtype and device unless
    they are named."""
    import json

    from qgmem.model.graph_token_lm import CONFIG_NAME, GraphTokenLM
    from qgmem.model.placement import checkpoint_dtype, resolve_device

    cfg_path = ck / CONFIG_NAME
    if not cfg_path.exists():
        raise FileNotFoundError(f"{cfg_path}: not found (not a GraphTokenLM checkpoint)")
    cfg = json.loads(cfg_path.read_text())
    tokenizer = None
    if llm is None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from qgmem.llm.hf import local_model_path

        name = (cfg.get("extra") or {}).get("model_name") or cfg.get("base_model")
        if not name:
            raise ValueError(f"{cfg_path}: no base model named (fields 'extra.model_name', 'base_model')")
        path = local_model_path(name)
        llm = AutoModelForCausalLM.from_pretrained(path, dtype=checkpoint_dtype(cfg, torch_dtype, str(cfg_path)))
        tokenizer = AutoTokenizer.from_pretrained(path)
        device = resolve_device(device)
    elif isinstance(llm, tuple):
        llm, tokenizer = llm
    else:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(llm.name_or_path)
    return GraphTokenLM.from_pretrained(ck, llm=llm, tokenizer=tokenizer, device=device, torch_dtype=torch_dtype)
