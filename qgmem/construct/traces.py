"""Dynamic memory traces (QGMem §III-A2): units of one evolving subject+relation, in memory-time order.

Candidates come from each unit's 20 nearest fact-level neighbours, which keeps consolidation O(n·k)
in pairs examined. Neighbours are found with TF-IDF cosine over claim words by default (CPU-cheap:
MiniLM-encoding every claim dominated the build time on 2 cores) or with MiniLM claim embeddings
(`neighbour_space: embedding`). Two neighbours join a trace when they share the subject
(case-insensitive) and their relations agree (relation-embedding cosine >= 0.80); connected groups
of >= 2 units are traces. We compare subject and relation separately rather than embedding the string
"subject relation": with MiniLM a shared person name dominates that similarity ("Melanie hear" vs
"Melanie type" scores above 0.8), which merges unrelated claims.

Roles (rule path): for *state* relations (live, work, be, have, own, ...), a later unit whose object
is incompatible with the current state (object cosine < `update_threshold`) is an *update* and
supersedes the states it contradicts; a compatible one is a *supplement* (both stay valid). Event
relations (go, visit, paint, ...) accumulate: later members are supplements, nothing is superseded.
The latest member is the latest supported state.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import sparse

from qgmem.types import AtomicUnit, MemoryTrace
from qgmem.words import load_list, load_words

Role = Literal["origin", "update", "supplement"]
RolesFn = Callable[[int, list[int]], "tuple[list[Role], set[int]] | None"]


@dataclass
class TraceConfig:
    neighbours: int = 20  # fact-level neighbours examined per unit
    relation_threshold: float = 0.80  # subject-relation cosine to join a trace
    min_size: int = 2
    update_threshold: float = 0.5  # object cosine below this = incompatible value = update
    neighbour_space: str = "tfidf"  # "tfidf" (claim words) | "embedding" (MiniLM claim embeddings)
    max_size: int = 50  # a larger group is split into chronological chunks (keeps trajectories readable)
    state_relations: list[str] = dataclasses.field(default_factory=lambda: list(STATE_RELATIONS))


# relations whose value is a current state that a later value replaces (rule path)
STATE_RELATIONS = load_list("state_relations")


# a unit whose subject is an unresolved pronoun cannot be placed in anyone's trajectory
UNRESOLVED_SUBJECTS = load_words("unresolved_subjects")


def subject_key(u: AtomicUnit) -> str:
    return " ".join(u.subject.lower().split())


def relation_text(u: AtomicUnit) -> str:
    return u.relation.strip() or "say"


def object_text(u: AtomicUnit) -> str:
    return u.object.strip() or u.text


def memory_time_key(u: AtomicUnit, position: int) -> tuple[str, int]:
    """Fact time if known, else utterance time, else dialogue order."""
    t = u.fact_time_start or (u.utterance_time or "")[:10]
    return (t or "9999", position)


def tfidf_matrix(texts: list[str]) -> sparse.csr_matrix:
    """L2-normalised TF-IDF rows over lower-cased content words (sublinear tf, smooth idf)."""
    from qgmem.construct.rule import STOPWORDS

    vocab: dict[str, int] = {}
    rows, cols, vals = [], [], []
    for i, t in enumerate(texts):
        counts: dict[int, int] = {}
        for w in re.findall(r"[a-z0-9']+", t.lower()):
            if w in STOPWORDS or len(w) < 2:
                continue
            j = vocab.setdefault(w, len(vocab))
            counts[j] = counts.get(j, 0) + 1
        for j, c in counts.items():
            rows.append(i)
            cols.append(j)
            vals.append(1.0 + np.log(c))
    m = sparse.csr_matrix((np.array(vals, dtype=np.float32), (rows, cols)), shape=(len(texts), max(1, len(vocab))))
    df = np.bincount(m.indices, minlength=m.shape[1])
    idf = (np.log((1 + len(texts)) / (1 + df)) + 1.0).astype(np.float32)
    m = m.multiply(idf[None, :]).tocsr()
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sparse.csr_matrix(m.multiply(1.0 / norms[:, None]), dtype=np.float32)


def neighbour_pairs(claim: np.ndarray | sparse.spmatrix, k: int) -> list[tuple[int, int]]:
    """(i, j), i < j, for j among the k nearest neighbours of i by cosine (rows are L2-normalised;
    dense embeddings or sparse TF-IDF rows)."""
    n = claim.shape[0]
    if n < 2:
        return []
    k = min(k, n - 1)
    pairs: set[tuple[int, int]] = set()
    block = 1024
    for s in range(0, n, block):
        sims = claim[s:s + block] @ claim.T
        sims = sims.toarray() if sparse.issparse(sims) else np.array(sims, dtype=np.float32)
        for r in range(sims.shape[0]):
            sims[r, s + r] = -np.inf
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        for r, row in enumerate(top):
            i = s + r
            for j in row.tolist():
                pairs.add((i, j) if i < j else (j, i))
    return sorted(pairs)


def _components(n: int, edges: list[tuple[int, int]]) -> list[list[int]]:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in edges:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return [sorted(g) for g in groups.values()]


def group_traces(units: list[AtomicUnit], claim: np.ndarray | sparse.spmatrix, relation: np.ndarray, cfg: TraceConfig) -> list[list[int]]:
    """Unit index groups (each in memory-time order) that form traces. `relation[i]` embeds units[i].relation."""
    subj = [subject_key(u) for u in units]
    # only named subjects ("Alice", "Alice's dog Rex") have a trajectory; pronouns and activities do not
    traceable = [s not in UNRESOLVED_SUBJECTS and u.subject[:1].isupper() for s, u in zip(subj, units)]
    edges = [(i, j) for i, j in neighbour_pairs(claim, cfg.neighbours)
             if subj[i] == subj[j] and traceable[i] and float(relation[i] @ relation[j]) >= cfg.relation_threshold]
    out: list[list[int]] = []
    for g in _components(len(units), edges):
        if len(g) < cfg.min_size:
            continue
        g = sorted(g, key=lambda i: memory_time_key(units[i], i))
        for s in range(0, len(g), cfg.max_size):
            chunk = g[s:s + cfg.max_size]
            if len(chunk) >= cfg.min_size:
                out.append(chunk)
    out.sort(key=lambda g: g[0])
    return out


def rule_roles(members: list[int], obj: np.ndarray, cfg: TraceConfig, is_state: bool = True
               ) -> tuple[list[Role], set[int]]:
    """Roles per member and the members superseded by a later update. `obj` rows align with `members`' indices."""
    roles: list[Role] = ["origin"]
    if not is_state:
        return roles + ["supplement"] * (len(members) - 1), set()
    active = [members[0]]
    superseded: set[int] = set()
    for m in members[1:]:
        sims = [float(obj[m] @ obj[a]) for a in active]
        if max(sims) < cfg.update_threshold:
            roles.append("update")
            superseded.update(active)
            active = [m]
        else:
            roles.append("supplement")
            active.append(m)
    return roles, superseded


def is_state_relation(relation: str, cfg: TraceConfig) -> bool:
    """A state relation by its verb: "work", "work at" and "not work at" all name the state "work"."""
    words = relation.lower().split()
    words = words[1:] if words[:1] == ["not"] else words
    states = set(cfg.state_relations)
    return bool(words) and (" ".join(words) in states or words[0] in states)


ObjectEmbedFn = Callable[[list[int]], np.ndarray]


def build_traces(
    units: list[AtomicUnit], claim: np.ndarray | sparse.spmatrix, relation: np.ndarray, objects: ObjectEmbedFn | np.ndarray,
    cfg: TraceConfig, roles_fn: RolesFn | None = None,
) -> tuple[list[AtomicUnit], list[MemoryTrace]]:
    """Traces of one namespace and the units with `trace_id`/`trace_role`/`superseded` set.

    `objects` is an (n, d) object-embedding matrix or a function giving it for the unit indices that need
    one (only members of state traces do, which saves most of the encoding). `roles_fn(trace_index,
    members) -> (roles, superseded) | None` may decide roles (the LLM path); None falls back to the rule.
    """
    if not units:
        return [], []
    ns = units[0].namespace
    new_units = [dataclasses.replace(u, trace_id=None, trace_role=None, superseded=False) for u in units]
    groups = group_traces(units, claim, relation, cfg)
    state = [is_state_relation(units[g[0]].relation, cfg) for g in groups]
    obj: np.ndarray | None = objects if isinstance(objects, np.ndarray) else None
    if obj is None:
        need = sorted({m for g, st in zip(groups, state) if st for m in g})
        dim = relation.shape[1] if relation.ndim == 2 else 1
        obj = np.zeros((len(units), dim), dtype=np.float32)
        if need:
            obj[need] = objects(need)  # type: ignore[operator]
    traces: list[MemoryTrace] = []
    for ti, members in enumerate(groups):
        decided = roles_fn(ti, members) if roles_fn is not None else None
        roles, sup = decided if decided is not None else rule_roles(members, obj, cfg, state[ti])
        tid = f"{ns}/t{ti}"
        head = units[members[0]]
        for m, role in zip(members, roles):
            new_units[m] = dataclasses.replace(new_units[m], trace_id=tid, trace_role=role, superseded=m in sup)
        traces.append(MemoryTrace(
            id=tid, namespace=ns, subject=head.subject, relation=head.relation,
            unit_ids=[units[m].id for m in members], roles=list(roles), latest_unit_id=units[members[-1]].id,
        ))
    return new_units, traces
