"""LongMemEval's official retrieval protocol (`protocol: official`): the corpus, gold, renaming, skips
and metrics of the benchmark's own `src/retrieval/run_retrieval.py` and `eval_utils.py`.

What the official script does, and this module with it:

- Corpus (turn granularity): the **user** turns of the haystack, in file order (session by session);
  the id of session ``S``'s ``i``-th turn (1-based, counted over all roles) is ``S_i``. Assistant turns
  are not in the corpus. Session granularity: one document per session.
- Gold: corpus ids that contain ``answer``. In a session whose id contains ``answer`` (an evidence
  session), a user turn without ``has_answer`` gets ``answer`` replaced by ``noans`` in its id, and so
  does a whole session none of whose user turns has ``has_answer``: neither is gold. Evidence in
  assistant turns is therefore never gold.
- Skips: questions whose id contains ``_abs`` (abstention) and questions with no user turn marked
  ``has_answer`` are left out of the means (counted, with the reason).
- Metrics at k = 1, 3, 5, 10, 30, 50 over a ranking of corpus positions: recall_any (a gold id in
  the top k), recall_all (every gold id in the top k; 1 when there is none), ndcg_any (binary relevance
  per corpus position, the official DCG in which ranks 1 and 2 weigh the same, ideal over the corpus).
  Session metrics of a turn ranking (`turn_to_session`): ids lose their ``_i`` suffix, and k grows
  until the top k turns hold k distinct sessions (or the corpus ends), as `evaluate_retrieval_turn2session`.

How a qgmem ranking becomes an official one (`turn_ranking`, `session_ranking`): a method returns ranked
items, each covering turns (a raw turn, a memory unit's source span, a context chunk). The official
ranking is the method's ranking restricted to the official corpus: the items' turns are read in rank
order and, within an item, in turn order; each user turn takes the next rank the first time it is met.
A unit spanning several turns so places each of its user turns, one rank each (k counts corpus
documents, as officially); an item holding only assistant turns maps to no corpus document and takes no
rank. A method that ranks whole sessions (``ranks = "sessions"``) is scored on the session corpus, its
sessions in order of first appearance. Corpus documents a method did not return are not retrieved (no
rank): the harness asks for a ranking as deep as the conversation (`official_depth`).

The benchmark's own session ids are needed for the ``answer`` / ``noans`` names; the loader keeps them
in ``Conversation.meta['original_session_ids']`` (opaque id -> benchmark id) and the file order in
``meta['haystack_order']``: used here to score, never shown to a method.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qgmem.evaluation.retrieval_metrics import official_dcg
from qgmem.types import Conversation, MemoryItem, Question

KS = (1, 3, 5, 10, 30, 50)
METRICS = ("recall_any", "recall_all", "ndcg_any")
USER = "user"
SKIP_ABSTENTION = "abstention"
SKIP_NO_USER_TARGET = "no user-side target"


@dataclass
class OfficialCorpus:
    """One question's official corpora: turn documents (qgmem turn ids -> position) and sessions."""

    turn_ids: list[str]  # official turn corpus ids, corpus order
    turn_pos: dict[str, int]  # qgmem turn id (a user turn) -> its position in the turn corpus
    session_ids: list[str]  # official session corpus ids, corpus (file) order
    session_pos: dict[str, int]  # qgmem session id -> its position in the session corpus
    session_of: dict[str, str]  # qgmem turn id -> qgmem session id
    skip: str | None  # why the official means leave the question out, or None

    def gold(self, level: str) -> set[str]:
        ids = self.turn_ids if level == "turn" else self.session_ids
        return {d for d in ids if "answer" in d}


def corpus(conv: Conversation, q: Question) -> OfficialCorpus:
    """The official corpora of `q` over its haystack `conv` (a conversation from `qgmem.data.longmemeval`)."""
    original = conv.meta.get("original_session_ids")
    order = conv.meta.get("haystack_order")
    if not isinstance(original, dict) or not isinstance(order, list):
        raise ValueError(f"conversation {conv.id!r}: protocol 'official' needs LongMemEval's session ids "
                         "(meta 'original_session_ids' and 'haystack_order', kept by qgmem.data.longmemeval); "
                         "score other data with protocol: all-turns")
    by_id = {s.id: s for s in conv.sessions}
    marked = set(q.evidence)  # the turns with has_answer
    turn_ids: list[str] = []
    turn_pos: dict[str, int] = {}
    session_ids: list[str] = []
    session_pos: dict[str, int] = {}
    session_of: dict[str, str] = {}
    any_user_target = False
    for sid in order:
        name = str(original[sid])
        evidence_session = "answer" in name
        user_marked = False
        for i, t in enumerate(by_id[sid].turns):
            session_of[t.id] = sid
            if t.speaker != USER:
                continue
            doc = f"{name}_{i + 1}"
            user_marked |= t.id in marked
            if evidence_session and t.id not in marked:
                doc = doc.replace("answer", "noans")
            turn_pos[t.id] = len(turn_ids)
            turn_ids.append(doc)
        any_user_target |= user_marked
        session_pos[sid] = len(session_ids)
        session_ids.append(name.replace("answer", "noans") if evidence_session and not user_marked else name)
    skip = SKIP_ABSTENTION if "_abs" in q.id else (None if any_user_target else SKIP_NO_USER_TARGET)
    return OfficialCorpus(turn_ids, turn_pos, session_ids, session_pos, session_of, skip)


def turn_ranking(items: Sequence[MemoryItem], c: OfficialCorpus) -> list[int]:
    """Turn-corpus positions in the order the items cover them (see the module docstring)."""
    out: dict[int, None] = {}
    for it in items:
        for t in it.turn_ids:
            if t in c.turn_pos:
                out.setdefault(c.turn_pos[t], None)
    return list(out)


def session_ranking(items: Sequence[MemoryItem], c: OfficialCorpus) -> list[int]:
    """Session-corpus positions in order of first appearance: an item's ``meta['session_id']``, else the
    sessions of its turns."""
    out: dict[int, None] = {}
    for it in items:
        sid = it.meta.get("session_id") if isinstance(it.meta, dict) else None
        for s in ([sid] if sid in c.session_pos else [c.session_of[t] for t in it.turn_ids if t in c.session_of]):
            out.setdefault(c.session_pos[s], None)
    return list(out)


def evaluate(ranking: Sequence[int], gold: set[str], ids: Sequence[str], k: int) -> tuple[float, float, float]:
    """(recall_any, recall_all, ndcg_any) at k of a ranking of corpus positions, as `evaluate_retrieval`."""
    top = [ids[i] for i in ranking[:k]]
    got = set(top)
    rel = [1.0 if d in gold else 0.0 for d in ids]
    ideal = official_dcg(sorted(rel, reverse=True), k)
    actual = official_dcg([rel[i] for i in ranking[:k]], k)
    return float(any(g in got for g in gold)), float(all(g in got for g in gold)), actual / ideal if ideal else 0.0


def _strip_turn(doc: str) -> str:
    return "_".join(doc.split("_")[:-1])


def turn_to_session(ranking: Sequence[int], gold: set[str], ids: Sequence[str], k: int) -> tuple[float, float, float]:
    """Session metrics of a turn ranking, as `evaluate_retrieval_turn2session`: ids lose their turn suffix
    (an evidence session's renamed turns make a ``noans`` session of their own, as officially) and k grows
    until the top k turns hold k distinct sessions or the corpus ends."""
    sess = [_strip_turn(d) for d in ids]
    sgold = {_strip_turn(d) for d in gold}
    eff = k
    while eff <= len(sess) and len({sess[i] for i in ranking[:eff]}) < k:
        eff += 1
    return evaluate(ranking, sgold, sess, eff)


def score(items: Sequence[MemoryItem], c: OfficialCorpus, ranks: str = "turns") -> dict[str, float]:
    """Official per-question metrics, keyed ``<level>_<metric>@<k>``: a turn ranking gives turn metrics and
    session metrics by `turn_to_session` (the official `--granularity turn`); a session ranking gives
    session metrics on the session corpus (`--granularity session`)."""
    out: dict[str, float] = {}
    if ranks == "sessions":
        ranking, gold = session_ranking(items, c), c.gold("session")
        for k in KS:
            out.update(_named("session", k, evaluate(ranking, gold, c.session_ids, k)))
        return out
    if ranks != "turns":
        raise ValueError(f"a method ranks 'turns' or 'sessions', not {ranks!r}")
    ranking, gold = turn_ranking(items, c), c.gold("turn")
    for k in KS:
        out.update(_named("turn", k, evaluate(ranking, gold, c.turn_ids, k)))
        out.update(_named("session", k, turn_to_session(ranking, gold, c.turn_ids, k)))
    return out


def _named(level: str, k: int, vals: tuple[float, float, float]) -> dict[str, float]:
    return {f"{level}_{m}@{k}": v for m, v in zip(METRICS, vals)}


def metric_names(level: str) -> list[str]:
    """Column names of one level, in the official order (each metric at every k)."""
    return [f"{level}_{m}@{k}" for m in METRICS for k in KS]
