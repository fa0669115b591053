"""LLM consolidation: per trace, the LLM decides update vs supplement (prompts/consolidate.txt).

Traces are grouped by the rule path (shared subject, state class from the word table; construct/traces.py); only
the roles come from the LLM. A reply that stays invalid after a re-ask falls back to the rule roles
for that trace and is recorded as a failure, so the build table counts it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from qgmem.construct.llm_extract import PHASE, load_prompt
from qgmem.construct.traces import Role
from qgmem.llm.base import ChatBackend, ChatRequest, ChatResult, LLMError, Message
from qgmem.llm.jsonfix import parse_json_lenient
from qgmem.types import AtomicUnit

ROLES = ("origin", "update", "supplement")


def parse_roles(text: str, n: int) -> tuple[list[Role], set[int]]:
    """Roles for n members and the member positions superseded; ValueError naming the problem."""
    data = parse_json_lenient(text)
    items = data.get("roles") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError('reply must be a JSON object with a "roles" list')  # noqa: TRY004 (a reply error)
    if len(items) != n:
        raise ValueError(f'"roles" has {len(items)} entries, expected {n} (one per unit, in order)')
    roles: list[Role] = []
    superseded: set[int] = set()
    for pos, it in enumerate(items):
        role = it.get("role") if isinstance(it, dict) else it
        if role not in ROLES:
            raise ValueError(f"roles[{pos}].role: {role!r} is not one of {list(ROLES)}")
        if (pos == 0) != (role == "origin"):
            raise ValueError(f"roles[{pos}]: only the first unit (U1) is the origin")
        roles.append(role)
        sup = it.get("supersedes", []) if isinstance(it, dict) else []
        if role == "update":
            for lab in sup or []:
                if not isinstance(lab, str) or not lab.strip().upper().startswith("U"):
                    raise ValueError(f"roles[{pos}].supersedes: {lab!r} is not a unit label like 'U1'")
                try:
                    k = int(lab.strip()[1:]) - 1
                except ValueError:
                    raise ValueError(f"roles[{pos}].supersedes: {lab!r} is not a unit label like 'U1'") from None
                if not 0 <= k < pos:
                    raise ValueError(f"roles[{pos}].supersedes: {lab!r} is not an earlier unit")
                superseded.add(k)
            if not sup:
                superseded.update(range(pos))  # an update with no list replaces everything before it
    return roles, superseded


@dataclass
class ConsolidationOutcome:
    decided: dict[int, tuple[list[Role], set[int]]] = field(default_factory=dict)  # trace index -> roles, positions
    failures: dict[int, tuple[str, str]] = field(default_factory=dict)  # trace index -> (error, raw)


class LLMConsolidator:
    def __init__(self, backend: ChatBackend, max_attempts: int = 2, max_tokens: int = 512):
        self.backend = backend
        self.max_attempts = max_attempts
        self.max_tokens = max_tokens
        self.template = load_prompt("consolidate.txt")

    def messages(self, members: list[AtomicUnit]) -> list[Message]:
        lines = []
        for k, u in enumerate(members):
            when = u.fact_time_start or (u.utterance_time or "")[:10] or "unknown time"
            lines.append(f"U{k + 1} ({when}; said {(u.utterance_time or '')[:10]}): {u.text}")
        prompt = self.template.format(subject=members[0].subject, relation=members[0].relation,
                                      units="\n".join(lines), first_label="U1")
        return [{"role": "user", "content": prompt}]

    def decide(self, groups: list[list[AtomicUnit]]) -> ConsolidationOutcome:
        """Roles for every group (trace) whose reply validated; failures for the rest."""
        out = ConsolidationOutcome()
        convos = {i: self.messages(g) for i, g in enumerate(groups)}
        pending = list(convos)
        last: dict[int, tuple[str, str]] = {}
        for _ in range(max(1, self.max_attempts)):
            if not pending:
                break
            reqs = [ChatRequest(convos[i], 0.0, self.max_tokens, True) for i in pending]
            replies: list[Any] = self.backend.complete_many(reqs, phase=PHASE)
            retry = []
            for i, rep in zip(pending, replies):
                if isinstance(rep, LLMError):
                    last[i] = (f"LLM call failed: {rep}", "")
                    continue
                assert isinstance(rep, ChatResult)
                try:
                    out.decided[i] = parse_roles(rep.text, len(groups[i]))
                    last.pop(i, None)
                except ValueError as e:
                    last[i] = (f"invalid roles: {e}", rep.text)
                    convos[i] = convos[i] + [{"role": "assistant", "content": rep.text},
                                             {"role": "user", "content": f"That reply could not be used: {e}. "
                                                                         "Reply again with ONLY the JSON object."}]
                    retry.append(i)
            pending = retry
        out.failures = {i: last[i] for i in last if i not in out.decided}
        return out
