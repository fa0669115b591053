"""The paper's correct-answer filter for training cases (QGMem appendix "Training Settings": 1,634 of
2,138 ConvoMem QA kept): the frozen answer model answers each prepared train case with the text
method (the working memory serialised as text, local graph as triples, `qgmem.answer` prompt), and a
case whose answer is judged wrong is dropped.

Only the train split is filtered. Validation and test must stay the unfiltered sample of the
benchmark: filtering them by what the frozen model already answers would select the checkpoint,
and report the score, on exactly the cases the text method gets right, so the graph token's gain
(and any loss on hard cases) could not be measured.

Judgement (deterministic, no judge LLM): correct when the SQuAD token F1 of the answer against any
gold answer reaches ``min_f1``, or a normalised gold answer occurs in the normalised answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from qgmem.answer import answer_messages, parse_answer, serialize_working_memory
from qgmem.evaluation.metrics import normalize_squad, squad_f1
from qgmem.llm.base import ChatBackend, ChatRequest, LLMError
from qgmem.llm.config import LLMConfig
from qgmem.types import Question, WorkingMemory


@dataclass
class AnswerFilterConfig:
    enabled: bool = False
    llm: LLMConfig = field(default_factory=LLMConfig)  # the frozen model the graph token is trained for
    max_tokens: int = 64  # answer length
    min_f1: float = 0.5  # SQuAD token F1 at or above which an answer counts as correct


def is_correct(prediction: str, golds: list[str], min_f1: float) -> bool:
    """The filter's judgement of one answer (see the module docstring)."""
    pred = normalize_squad(prediction)
    if pred and any(normalize_squad(g) and normalize_squad(g) in pred for g in golds):
        return True
    return squad_f1(prediction, golds) >= min_f1


class AnswerFilter:
    """Answers train cases with the frozen model and keeps the correct ones; counts what it did."""

    def __init__(self, cfg: AnswerFilterConfig, backend: ChatBackend | None = None):
        from qgmem.llm.factory import make_backend

        self.cfg = cfg
        self.backend = backend if backend is not None else make_backend(cfg.llm)

    def keep(self, cases: list[tuple[Question, WorkingMemory]]) -> list[bool]:
        """One flag per (question, working memory): True when the frozen model answers it correctly.
        A failed LLM call is an error, not a dropped case (a flaky server must not thin the data)."""
        if not cases:
            return []
        reqs = [ChatRequest(answer_messages(q, serialize_working_memory(wm, with_graph=True)), 0.0,
                            self.cfg.max_tokens) for q, wm in cases]
        results = self.backend.complete_many(reqs, phase="answer_filter")
        flags = []
        for (q, _), res in zip(cases, results):
            if isinstance(res, LLMError):
                raise res
            flags.append(is_correct(parse_answer(res.text)[0], [str(a) for a in q.answers], self.cfg.min_f1))
        return flags


def filter_counts(done: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Train cases checked / kept / dropped by the filter, summed over the resume log."""
    checked = sum(r.get("filter_checked", 0) for r in done.values())
    dropped = sum(r.get("filter_dropped", 0) for r in done.values())
    return {"checked": checked, "kept": checked - dropped, "dropped": dropped}
