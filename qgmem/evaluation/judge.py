"""LLM-as-judge with the LoCoMo judge prompt (QGMem appendix) and LongMemEval's official
per-type prompts, repeated `n` times at temperature 0.

A judge run that fails (the backend raises after its retries, or the reply cannot be parsed after
`parse_retries` repair turns) is recorded as FAILED (None): it is excluded from the mean and
counted, never scored as wrong.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable

from qgmem.llm.base import ChatBackend, LLMError, Message
from qgmem.types import Question

LONGMEMEVAL_TYPED = ("temporal-reasoning", "knowledge-update", "single-session-preference")


@functools.lru_cache(maxsize=None)
def load_prompt(name: str) -> str:
    """A prompt template shipped in qgmem/evaluation/prompts/."""
    return resources.files("qgmem.evaluation").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8").strip()


def parse_json_object(text: str) -> Any:
    """Lenient JSON (code fences, text around it) via the shared repairer; falls back to the first {...}."""
    try:
        from qgmem.llm.jsonfix import parse_json_lenient
    except ImportError:  # the shared repairer is optional here
        parse_json_lenient = None
    if parse_json_lenient is not None:
        return parse_json_lenient(text)
    m = re.search(r"\{.*\}", text, flags=re.S)
    if not m:
        raise ValueError(f"no JSON object in {text[:80]!r}")
    return json.loads(m.group(0))


def parse_label(text: str) -> tuple[int, str]:
    """{"label": "CORRECT"|"INCORRECT", "reason": ...} -> (1|0, reason). Raises ValueError."""
    try:
        obj = parse_json_object(text)
    except ValueError:
        obj = None
    if isinstance(obj, dict):
        label = str(obj.get("label", "")).strip().upper()
        reason = str(obj.get("reason", ""))
        if label in ("CORRECT", "INCORRECT"):
            return int(label == "CORRECT"), reason
    words = re.findall(r"\b(INCORRECT|CORRECT|WRONG|RIGHT)\b", text.upper())
    if len(set(words)) == 1:  # a bare, unambiguous label
        return int(words[0] in ("CORRECT", "RIGHT")), text.strip()[:200]
    raise ValueError(f"judge reply has no CORRECT/INCORRECT label: {text[:120]!r}")


def parse_yes_no(text: str) -> tuple[int, str]:
    """LongMemEval's rule ('yes' in the lowercased reply means correct); a reply with neither yes
    nor no is unparseable rather than wrong."""
    low = text.lower()
    if "yes" in low:
        return 1, text.strip()[:200]
    if re.search(r"\bno\b", low):
        return 0, text.strip()[:200]
    raise ValueError(f"judge reply is neither yes nor no: {text[:120]!r}")


@dataclass
class JudgePrompt:
    messages: list[Message]
    parser: Callable[[str], tuple[int, str]]
    kind: str  # which prompt, for the report
    repair: str  # the follow-up sent when a reply cannot be parsed


def is_longmemeval_abstention(q: Question) -> bool:
    return q.id.endswith("_abs") or bool(q.meta.get("abstention"))


def build_judge_prompt(benchmark: str, question: Question, prediction: str) -> JudgePrompt:
    """The prompt for this benchmark and question type."""
    answer = "; ".join(str(a) for a in question.answers) if question.answers else ""
    if benchmark.startswith("longmemeval"):
        if is_longmemeval_abstention(question):
            kind = "longmemeval_abstention"
        elif question.category in LONGMEMEVAL_TYPED:
            kind = f"longmemeval_{question.category}"
        else:
            kind = "longmemeval_default"
        text = load_prompt(kind).format(question=question.text, answer=answer, response=prediction)
        return JudgePrompt([{"role": "user", "content": text}], parse_yes_no, kind,
                           "Your reply could not be read. Answer yes or no only.")
    if benchmark == "locomo" and str(question.category) == "5":
        kind = "locomo_abstention_judge"
        adv = str(question.meta.get("adversarial_answer", answer or "(none given)"))
        text = load_prompt(kind).format(question=question.text, answer=adv, response=prediction)
    else:
        kind = "locomo_judge"
        text = load_prompt(kind).format(question=question.text, answer=answer, response=prediction)
    return JudgePrompt([{"role": "user", "content": text}], parse_label, kind,
                       'Your reply could not be read. Reply with the JSON object only: '
                       '{"reason": "...", "label": "CORRECT"} or {"reason": "...", "label": "INCORRECT"}.')


@dataclass
class JudgeVerdict:
    runs: list[int | None]  # one per repeat; None = FAILED
    reasons: list[str] = field(default_factory=list)
    prompt: str = ""
    parse_repairs: int = 0

    @property
    def failed_runs(self) -> int:
        return sum(r is None for r in self.runs)

    @property
    def score(self) -> float | None:
        """Mean over the runs that did not fail; None when every run failed."""
        ok = [r for r in self.runs if r is not None]
        return sum(ok) / len(ok) if ok else None

    def as_dict(self) -> dict[str, Any]:
        return {"runs": self.runs, "score": self.score, "failed_runs": self.failed_runs,
                "reasons": self.reasons, "prompt": self.prompt, "parse_repairs": self.parse_repairs}


class Judge:
    """Scores predictions with `repeats` judge runs each. Runs are told apart by a run marker in a
    system message so that a response cache does not collapse them into one."""

    def __init__(self, backend: ChatBackend, benchmark: str, repeats: int = 3, parse_retries: int = 2,
                 max_tokens: int = 128, temperature: float = 0.0):
        if repeats < 1:
            raise ValueError(f"judge repeats must be >= 1, got {repeats}")
        self.backend = backend
        self.benchmark = benchmark
        self.repeats = repeats
        self.parse_retries = parse_retries
        self.max_tokens = max_tokens
        self.temperature = temperature

    def _one_run(self, prompt: JudgePrompt, run: int) -> tuple[int | None, str, int]:
        msgs: list[Message] = list(prompt.messages)
        if self.repeats > 1:
            msgs = [{"role": "system", "content": f"Grading run {run + 1} of {self.repeats}."}] + msgs
        repairs = 0
        for attempt in range(self.parse_retries + 1):
            try:
                res = self.backend.chat(msgs, temperature=self.temperature, max_tokens=self.max_tokens,
                                        json_mode=prompt.parser is parse_label, phase="judge")
            except LLMError as e:
                return None, f"FAILED: {e}", repairs
            try:
                label, reason = prompt.parser(res.text)
                return label, reason, repairs
            except ValueError as e:
                if attempt == self.parse_retries:
                    return None, f"FAILED: unparseable judge reply after {attempt} repair(s): {e}", repairs
                repairs += 1
                msgs = msgs + [{"role": "assistant", "content": res.text},
                               {"role": "user", "content": prompt.repair}]
        raise AssertionError("unreachable")

    def judge(self, question: Question, prediction: str) -> JudgeVerdict:
        prompt = build_judge_prompt(self.benchmark, question, prediction)
        verdict = JudgeVerdict(runs=[], prompt=prompt.kind)
        for r in range(self.repeats):
            label, reason, repairs = self._one_run(prompt, r)
            verdict.runs.append(label)
            verdict.reasons.append(reason)
            verdict.parse_repairs += repairs
        return verdict


def repeated_accuracy(per_question_runs: list[list[int | None]]) -> dict[str, float | int]:
    """Accuracy of each judge run over the questions it scored, then mean ± std (population) across
    runs; plus how many (question, run) judgements FAILED and how many questions had no valid run."""
    import numpy as np

    if not per_question_runs:
        return {"mean": float("nan"), "std": float("nan"), "runs": 0, "failed_judgements": 0, "failed_questions": 0}
    n_runs = max(len(r) for r in per_question_runs)
    accs = []
    for r in range(n_runs):
        vals = [q[r] for q in per_question_runs if r < len(q) and q[r] is not None]
        if vals:
            accs.append(sum(vals) / len(vals))
    failed = sum(v is None for q in per_question_runs for v in q)
    failed_q = sum(all(v is None for v in q) for q in per_question_runs)
    return {"mean": float(np.mean(accs)) if accs else float("nan"),
            "std": float(np.std(accs)) if accs else float("nan"),
            "runs": n_runs, "failed_judgements": failed, "failed_questions": failed_q}
