"""The answer step of every method: the prompt, the working memory rendered as text, reply parsing, token counting and generation
through a `ChatBackend`.

One place, so that the graph-token collator, the text methods, the inference pipeline and the
evaluation harness show the model the same prompt and read its reply the same way.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from torch_geometric.data import Data

from qgmem.graph.local_graph import GraphConfig, graph_triples
from qgmem.llm.base import ChatBackend, ChatRequest, LLMError
from qgmem.types import MemoryItem, MemoryMethod, Question, WorkingMemory

DEFAULT_SYSTEM = (
    "You answer questions about a long conversation between people. Use only the memory given "
    "to you; it was retrieved from the conversation. Memory entries are labelled like [M1]. "
    "If a fact was later updated, trust the latest state unless the question asks about the past. "
    "Reason briefly, citing the labels you rely on, then give the final line as "
    "'Answer: <short answer>'. If the memory does not contain the answer, write "
    "'Answer: not mentioned'."
)

_LABEL_RE = re.compile(r"\[(M\d+)\]")


def _time_line(item: MemoryItem) -> str:
    u = item.unit
    if u is None:
        t = item.meta.get("time") if item.meta else None
        return f"time: {t}" if t else ""
    parts = []
    if u.fact_time_start:
        span = u.fact_time_start if not u.fact_time_end or u.fact_time_end == u.fact_time_start \
            else f"{u.fact_time_start} to {u.fact_time_end}"
        parts.append(f"time: {span}")
    if u.utterance_time:
        parts.append(f"said on {u.utterance_time}")
    return "; ".join(parts)


def _span(item: MemoryItem) -> str:
    if not item.turn_ids:
        return ""
    return item.turn_ids[0] if len(item.turn_ids) == 1 else f"{item.turn_ids[0]}..{item.turn_ids[-1]}"


def render_item(item: MemoryItem) -> str:
    """One labelled memory entry, multi-line."""
    head = f"[{item.label}] {item.text.strip()}"
    if item.unit is not None and item.unit.superseded:
        head += " (superseded by a later update)"
    lines = [head]
    tl = _time_line(item)
    if tl:
        lines.append(f"  {tl}")
    if item.source_text.strip():
        src = " ".join(item.source_text.split()) if "\n" not in item.source_text.strip() else \
            "\n    ".join(s.strip() for s in item.source_text.strip().splitlines() if s.strip())
        sp = _span(item)
        lines.append(f"  source{f' ({sp})' if sp else ''}: {src}")
    if item.trajectory:
        lines.append("  trajectory: " + " -> ".join(s.strip() for s in item.trajectory))
    return "\n".join(lines)


def graph_text(wm: WorkingMemory, graph: Data | None = None, cfg: GraphConfig | None = None) -> str:
    """The local graph as triples, one per line, each with the label of the entry it came from."""
    if graph is not None:
        nodes, rels = list(graph.node_text), list(graph.edge_text)
        labels = list(getattr(graph, "labels", None) or [""] * len(rels))
        old = list(getattr(graph, "superseded", None) or [False] * len(rels))
        ei = graph.edge_index.tolist()
        edges = list(zip(ei[0], ei[1])) if rels else []
    else:
        tr = graph_triples(wm, cfg)
        nodes, rels, labels, edges, old = tr.node_text, tr.edge_text, tr.labels, tr.edge_index, tr.superseded
    lines = []
    for (s, o), r, lab, sup in zip(edges, rels, labels, old):
        lines.append(f"({nodes[s]}) -[{r}]-> ({nodes[o]})" + (f" [{lab}]" if lab else "")
                     + (" (superseded)" if sup else ""))
    return "\n".join(lines)


def serialize_working_memory(wm: WorkingMemory, with_graph: bool = True, graph: Data | None = None) -> str:
    """Labelled entries, then (optionally) the local graph as text triples."""
    if not wm.items:
        return "(no memory retrieved)"
    out = ["\n".join(render_item(it) for it in wm.items)]
    if with_graph:
        g = graph_text(wm, graph)
        if g:
            out.append("Relations between memory entries (subject -[relation]-> object):\n" + g)
    return "\n\n".join(out)


TOKEN_DEFINITION = "words and punctuation marks"


def count_tokens(text: str) -> int:
    """The one context-token count of the package: words and punctuation marks (model-independent, so
    every method is counted alike; see `context_tokens` and `item_tokens`)."""
    return len(re.findall(r"\w+|[^\w\s]", text))


def question_text(question: Question | str) -> str:
    if isinstance(question, str):
        return question.strip()
    q = question.text.strip()
    return f"{q}\n(The question is asked on {question.question_time}.)" if question.question_time else q


def answer_messages(question: Question | str, memory_text: str, system: str | None = None) -> list[dict[str, Any]]:
    """Chat messages asking for an answer grounded only in ``memory_text``."""
    user = f"Memory:\n{memory_text.strip()}\n\nQuestion: {question_text(question)}"
    return [{"role": "system", "content": system or DEFAULT_SYSTEM}, {"role": "user", "content": user}]


@dataclass
class Reply:
    """A model reply read: the short answer, the labels it cites, and whether its reasoning was cut.

    ``reasoning_cut`` is True when the reply opens a ``<think>`` block it never closes (generation
    stopped mid-reasoning, e.g. at ``max_tokens``): the reasoning is never taken as the answer.
    """

    answer: str
    labels: list[str]
    reasoning_cut: bool = False


_ANSWER_LINE = re.compile(r"(?im)^\W*(?:final\s+)?answer\s*[:：]\s*")


def _strip_reasoning(text: str) -> tuple[str, bool]:
    """`text` without reasoning: closed ``<think>...</think>`` blocks go; a ``</think>`` without its
    opening (the template wrote ``<think>`` into the prompt) drops everything before it; an unclosed
    ``<think>`` drops everything after it, except a final "Answer:" line written after it."""
    text = re.sub(r"<think>.*?</think>", "", text or "", flags=re.DOTALL)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    if "<think>" not in text:
        return text.strip(), False
    before, reasoning = text.split("<think>", 1)
    tail = list(_ANSWER_LINE.finditer(reasoning))
    kept = before + ("\n" + reasoning[tail[-1].start():] if tail else "")
    return kept.strip(), True


def parse_reply(text: str) -> Reply:
    """Read a model reply: the answer is what follows the last "Answer:" line (a reply without one is
    taken whole, minus any reasoning block); labels are every [Mi] cited outside reasoning, first
    mention first. Truncated reasoning (an unclosed ``<think>``) never becomes the answer: without an
    "Answer:" line after it the answer is empty and `Reply.reasoning_cut` says why."""
    text, cut = _strip_reasoning(text)
    labels = list(dict.fromkeys(_LABEL_RE.findall(text)))
    matches = list(_ANSWER_LINE.finditer(text))
    if matches:
        ans = text[matches[-1].end():].strip().splitlines()[0] if text[matches[-1].end():].strip() else ""
    else:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        ans = lines[-1] if lines else ""
    ans = _LABEL_RE.sub("", ans)
    ans = re.sub(r"\(\s*\)|\s+", " ", ans).strip().strip("*").strip()
    ans = re.sub(r"\s+([.,;:!?])", r"\1", ans).rstrip(" .")
    return Reply(ans, labels, cut)


def parse_answer(text: str) -> tuple[str, list[str]]:
    """(answer, cited labels) of `parse_reply`; an unclosed ``<think>`` gives an empty answer."""
    r = parse_reply(text)
    return r.answer, r.labels


REASONING_CUT = ("reasoning cut off: the reply opens <think> and never closes it, with no 'Answer:' line; "
                 "raise answer.max_tokens or switch thinking off (chat_template_kwargs: {enable_thinking: false})")


@dataclass
class Answer:
    prediction: str
    raw: str
    cited: list[str] = field(default_factory=list)
    memory_text: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    error: str | None = None  # the LLMError text when generation failed after retries
    cached: bool = False  # answered from the response cache
    memory_truncated: bool = False  # the memory text was cut to the context budget
    reasoning_cut: bool = False  # the reply's <think> block was never closed (see `parse_reply`)


def _read(raw: str) -> tuple[str, list[str], bool, str | None]:
    """(prediction, cited, reasoning_cut, error) of a reply: cut reasoning with no answer is an error,
    so the runner counts it as a failed answer (scored 0, never judged) instead of scoring noise."""
    r = parse_reply(raw)
    return r.answer, r.labels, r.reasoning_cut, (REASONING_CUT if r.reasoning_cut and not r.answer else None)


def cap_tokens(text: str, max_tokens: int) -> tuple[str, bool]:
    """`text` cut after its `max_tokens`-th token (words and punctuation, as `count_tokens`), with a
    visible note; (text, False) when it fits or `max_tokens` <= 0."""
    if max_tokens <= 0:
        return text, False
    for i, m in enumerate(re.finditer(r"\w+|[^\w\s]", text)):
        if i == max_tokens:
            return text[: m.start()].rstrip() + "\n(memory cut here to fit the context budget)", True
    return text, False


def memory_text(method: MemoryMethod, wm: WorkingMemory, with_graph: bool = True) -> str:
    """What the answer model reads: the method's own `render` when it gives one (full context),
    else the shared serialisation, with the local graph when the method asks for it (`graph_in_memory`)."""
    own = method.render(wm)
    if own is not None:
        return own
    return serialize_working_memory(wm, with_graph=with_graph and method.graph_in_memory)


def context_tokens(method: MemoryMethod, wm: WorkingMemory, with_graph: bool = True) -> int:
    """Context tokens of a working memory: `count_tokens` of the memory text the answer prompt shows
    (`memory_text`), the same counter and rendering for every method."""
    return count_tokens(memory_text(method, wm, with_graph))


def item_tokens(method: MemoryMethod, wm: WorkingMemory) -> list[int]:
    """Per entry, in rank order: the tokens of that entry as the answer prompt renders it (the memory
    text of a working memory holding that entry alone, without the local graph). Budget recall charges
    these, so an entry pays for everything the model reads of it (claim, time, source, trajectory)."""
    out = []
    for it in wm.items:
        one = WorkingMemory(question=wm.question, items=[it], method=wm.method)
        out.append(count_tokens(memory_text(method, one, with_graph=False)))
    return out


def generate_answers(method: MemoryMethod, batch: list[tuple[Question, WorkingMemory]], backend: ChatBackend | None,
                     max_tokens: int = 64, with_graph: bool = True, max_context_tokens: int = 0) -> list[Answer]:
    """Answers for several questions at once: one `complete_many` call, so a local model batches
    the prompts and an HTTP backend sends them concurrently. Failures come back per question."""
    if method.answers_itself or len(batch) <= 1:
        return [generate_answer(method, q, wm, backend, max_tokens, with_graph, max_context_tokens) for q, wm in batch]
    if backend is None:
        raise ValueError(f"method {method.name!r} answers through an LLM: give an answer backend")
    capped = [cap_tokens(memory_text(method, wm, with_graph), max_context_tokens) for _, wm in batch]
    texts = [t for t, _ in capped]
    reqs = [ChatRequest(answer_messages(q, t), 0.0, max_tokens) for (q, _), t in zip(batch, texts)]
    t0 = time.perf_counter()
    results = backend.complete_many(reqs, phase="generation")
    wall = (time.perf_counter() - t0) / len(batch)
    out: list[Answer] = []
    for res, (text, cut) in zip(results, capped):
        if isinstance(res, LLMError):
            out.append(Answer("", "", [], text, 0, 0, wall, error=str(res), memory_truncated=cut))
            continue
        ans, cited, rcut, err = _read(res.text)
        out.append(Answer(ans, res.text, cited, text, res.prompt_tokens, res.completion_tokens, wall, error=err,
                          cached=bool(res.cached), memory_truncated=cut, reasoning_cut=rcut))
    return out


def generate_answer(method: MemoryMethod, question: Question, wm: WorkingMemory, backend: ChatBackend | None,
                    max_tokens: int = 64, with_graph: bool = True, max_context_tokens: int = 0) -> Answer:
    """One answer. A generation call that fails after the backend's retries comes back with
    `error` set and an empty prediction: the runner counts it, it is never silently dropped."""
    t0 = time.perf_counter()
    if method.answers_itself:
        raw, pt, ct = method.answer(question, wm, max_tokens)
        ans, cited, rcut, err = _read(raw)
        return Answer(ans, raw, cited, "", pt, ct, time.perf_counter() - t0, error=err, reasoning_cut=rcut)
    if backend is None:
        raise ValueError(f"method {method.name!r} answers through an LLM: give an answer backend")
    text, cut = cap_tokens(memory_text(method, wm, with_graph), max_context_tokens)
    try:
        res = backend.chat(answer_messages(question, text), temperature=0.0, max_tokens=max_tokens,
                           phase="generation")
    except LLMError as e:
        return Answer("", "", [], text, 0, 0, time.perf_counter() - t0, error=str(e), memory_truncated=cut)
    ans, cited, rcut, err = _read(res.text)
    return Answer(ans, res.text, cited, text, res.prompt_tokens, res.completion_tokens, time.perf_counter() - t0,
                  error=err, cached=bool(res.cached), memory_truncated=cut, reasoning_cut=rcut)
