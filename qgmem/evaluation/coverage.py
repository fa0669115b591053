"""Semantic coverage: the share of reference facts (nuggets) that the answer entails.

The paper uses AlignScore-large; its weights are not available offline here, so coverage is
computed with an entailment prompt per reference fact on the judge backend and reported under
the method name ``judge-entailment`` (never presented as AlignScore). A fact whose entailment call
fails is counted as failed and left out of the ratio.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from qgmem.evaluation.judge import load_prompt, parse_json_object
from qgmem.llm.base import ChatBackend, LLMError
from qgmem.types import Question

METHOD_NAME = "judge-entailment"


def reference_facts(question: Question) -> list[str]:
    """Nuggets/rubric items given by the benchmark, else the reference answers split on ';' and lines
    (commas are kept: they occur inside dates and names)."""
    for key in ("nuggets", "rubric", "facts"):
        v = question.meta.get(key)
        if isinstance(v, list) and v:
            return [str(x).strip() for x in v if str(x).strip()]
    facts: list[str] = []
    for a in question.answers:
        facts.extend(p.strip() for p in re.split(r"[;\n]", str(a)) if p.strip())
    return facts


def _parse_entailed(text: str) -> bool:
    try:
        obj = parse_json_object(text)
    except ValueError:
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get("entailed"), (bool, str)):
        v = obj["entailed"]
        if isinstance(v, bool):
            return v
        if v.strip().lower() in ("true", "yes"):
            return True
        if v.strip().lower() in ("false", "no"):
            return False
    low = text.strip().lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    raise ValueError(f"entailment reply has no true/false: {text[:120]!r}")


@dataclass
class CoverageResult:
    entailed: list[bool | None] = field(default_factory=list)  # per fact; None = failed call
    facts: list[str] = field(default_factory=list)

    @property
    def score(self) -> float | None:
        ok = [e for e in self.entailed if e is not None]
        return sum(ok) / len(ok) if ok else None

    def as_dict(self) -> dict[str, Any]:
        return {"method": METHOD_NAME, "score": self.score, "facts": self.facts, "entailed": self.entailed,
                "failed": sum(e is None for e in self.entailed)}


def semantic_coverage(backend: ChatBackend, question: Question, prediction: str, parse_retries: int = 1,
                      max_tokens: int = 32) -> CoverageResult:
    """One entailment call per reference fact (phase "judge")."""
    res = CoverageResult(facts=reference_facts(question))
    for fact in res.facts:
        msgs = [{"role": "user", "content": load_prompt("coverage_entailment").format(
            question=question.text, response=prediction, fact=fact)}]
        verdict: bool | None = None
        for attempt in range(parse_retries + 1):
            try:
                out = backend.chat(msgs, temperature=0.0, max_tokens=max_tokens, json_mode=True, phase="judge")
            except LLMError:
                break
            try:
                verdict = _parse_entailed(out.text)
                break
            except ValueError:
                msgs = msgs + [{"role": "assistant", "content": out.text},
                               {"role": "user", "content": 'Reply with {"entailed": true} or {"entailed": false} only.'}]
        res.entailed.append(verdict)
    return res
