"""Working memory as text: the text half of the fused prompt, and the whole memory for API models.

Each item is labelled ([M1], [M2], ...) so answers can cite their evidence; a unit shows its
fact summary, fact/utterance time, source dialogue span and trace trajectory (superseded states
marked), then the local graph follows as ``(subject) -[relation]-> (object)`` triples (QGMem §III-C3
and the API-backbone fallback of §IV). `answer_messages` is the one answer prompt every text-based
method uses; `parse_answer` reads its "Answer: ..." line and citations back.
"""

from __future__ import annotations

import re
from typing import Any

from torch_geometric.data import Data

from qgmem.graph.local_graph import GraphConfig, graph_triples
from qgmem.types import MemoryItem, Question, WorkingMemory

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


def question_text(question: Question | str) -> str:
    if isinstance(question, str):
        return question.strip()
    q = question.text.strip()
    return f"{q}\n(The question is asked on {question.question_time}.)" if question.question_time else q


def answer_messages(question: Question | str, memory_text: str, system: str | None = None) -> list[dict[str, Any]]:
    """Chat messages asking for an answer grounded only in ``memory_text``."""
    user = f"Memory:\n{memory_text.strip()}\n\nQuestion: {question_text(question)}"
    return [{"role": "system", "content": system or DEFAULT_SYSTEM}, {"role": "user", "content": user}]


def parse_answer(text: str) -> tuple[str, list[str]]:
    """(answer, cited labels) from a model reply.

    The answer is what follows the last "Answer:" (a reply without one is taken whole, minus any
    reasoning block); labels are every [Mi] cited anywhere in the reply, first mention first.
    """
    text = re.sub(r"<think>.*?</think>", "", text or "", flags=re.DOTALL).strip()
    labels = list(dict.fromkeys(_LABEL_RE.findall(text)))
    matches = list(re.finditer(r"(?im)^\W*(?:final\s+)?answer\s*[:：]\s*", text))
    if matches:
        ans = text[matches[-1].end():].strip().splitlines()[0] if text[matches[-1].end():].strip() else ""
    else:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        ans = lines[-1] if lines else ""
    ans = _LABEL_RE.sub("", ans)
    ans = re.sub(r"\(\s*\)|\s+", " ", ans).strip().strip("*").strip()
    ans = re.sub(r"\s+([.,;:!?])", r"\1", ans).rstrip(" .")
    return ans, labels
