"""QGMem working-memory activation as a `MemoryMethod` (QGMem §III-B1-2).

build(conversation): load the conversation's units and traces from the store, or build them with
`qgmem.construct.build_memory`, then index them (BM25, dense, attribute; embeddings cached in the store).
activate(question, k): parse constraints -> channels -> RRF pool -> (trace expansion) -> rerank ->
top-k units whose spans are not already covered -> `WorkingMemory` with a context-token count.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from qgmem.answer import context_tokens
from qgmem.llm.base import ChatBackend
from qgmem.types import AtomicUnit, Conversation, MemoryItem, MemoryTrace, MethodBase, Question, WorkingMemory

from . import activation_graph as ag
from .attributes import AttributeIndex
from .config import RetrievalConfig
from .dense import DenseIndex, ivf_spec, matvec
from .documents import UnitTexts
from .fusion import Ranked, rrf
from .lexical import LexicalIndex
from .qcache import encode_question
from .query import QueryConstraints, QueryParser
from .states import question_tense, reorder
from .states import trace_rows as trace_rows_of
from .features import PoolView, pool_features
from .rerank import NoReranker, PoolRanker, Reranker, make_reranker
from .turns import TurnIndex, dated_turns, turn_document

CHANNELS = ("lexical", "dense", "attribute", "turn-lexical", "turn-dense")


@dataclass
class _ConvIndex:
    units: list[AtomicUnit]
    texts: UnitTexts
    lexical: LexicalIndex
    dense: DenseIndex
    attributes: AttributeIndex
    names: dict[str, str]  # lower-cased entity name -> display name (rule parser vocabulary)
    max_name_words: int
    row_of: dict[str, int]
    trace_rows: dict[int, list[int]]  # unit row -> rows of the other members of its trace
    turns: TurnIndex | None  # raw-turn channels (None without the conversation or when off)
    latest_row: dict[int, int]  # unit row -> row of its trace's latest state
    update_row: dict[int, int]  # superseded row -> row of the update that followed it
    graph: ag.UnitGraph | None = None  # the namespace's memory graph (None when graph activation is off)


class QGMemRetriever(MethodBase):
    """Hybrid retrieval + reranking over one store; `activate` picks the index by question.conversation_id.
    `graph_in_memory`: the answer step appends the local graph as triples (the qgmem-text method)."""

    name = "qgmem"  # the registry names each instance (qgmem-activation, an ablation, qgmem-text)

    def __init__(self, store: object | None, cfg: RetrievalConfig | None = None, llm: ChatBackend | None = None,
                 reranker: Reranker | None = None, name: str | None = None, graph_in_memory: bool = False,
                 turn_features: bool = False):
        from qgmem.embed import get_embedder

        self.cfg = cfg or RetrievalConfig()
        unknown = set(self.cfg.channels) - set(CHANNELS)
        if unknown or not self.cfg.channels:
            raise ValueError(f"channels must be a non-empty subset of {', '.join(CHANNELS)}; got {self.cfg.channels}")
        self.store = store
        if name:
            self.name = name
        self.graph_in_memory = graph_in_memory
        self.turn_features = turn_features  # build the turn index for pool features (ranker training data)
        self.embedder = get_embedder(self.cfg.embedder, self.cfg.device)
        needs_llm = self.cfg.query_parser == "llm" or self.cfg.rerank.kind == "chat"
        if llm is None and needs_llm:
            from qgmem.llm import make_backend

            llm = make_backend(self.cfg.llm)
        self.llm = llm
        self.parser = QueryParser(self.cfg.query_parser, llm)
        ag.check_edges(self.cfg.graph.edges)
        self.reranker = reranker if reranker is not None else make_reranker(self.cfg.rerank, llm)
        self._index: dict[str, _ConvIndex] = {}

    # ---- building ----

    def build(self, conversation: Conversation) -> None:
        units, traces = self._units_for(conversation)
        self.index_units(conversation, units, traces)

    def _units_for(self, conversation: Conversation) -> tuple[list[AtomicUnit], list[MemoryTrace]]:
        """The stored memory brought in line with `conversation` (a no-op when it is current); a
        memory left incomplete by failed windows is refused unless `allow_partial`."""
        from qgmem.construct.build import BuildReport, MemoryIncomplete, build_memory

        report = BuildReport()
        got = build_memory(conversation, extractor=self.cfg.extractor, store=self.store, report=report,
                           llm=self.llm if self.cfg.extractor == "llm" else None)
        if report.incomplete and not self.cfg.allow_partial:
            raise MemoryIncomplete.from_report(conversation.id, report)
        return got

    def _encode_cached(self, ns: str, kind: str, texts: list[str]) -> np.ndarray:
        """Embeddings of `texts`, reusing the store's rows for texts encoded before (by text hash)."""
        def encode(todo: list[str]) -> np.ndarray:
            return self.embedder.encode(todo, show_progress=len(todo) > 2000)

        if self.store is None:
            return encode(texts) if texts else np.zeros((0, self.embedder.dim), np.float32)
        return self.store.cached_vectors(ns, kind, texts, encode, self.embedder.name)[0]

    def index_units(self, conversation: Conversation | None, units: list[AtomicUnit], traces: list[MemoryTrace],
                    namespace: str | None = None) -> None:
        """Index given units (used by `build`; also for units that come from elsewhere)."""
        ns = namespace or (conversation.id if conversation is not None else (units[0].namespace if units else ""))
        cfg = self.cfg
        texts = UnitTexts(conversation, units, traces)
        docs = [texts.index_text(u, cfg.index_source, cfg.context_turns, cfg.context_chars) for u in units]
        dense_docs = [self._dense_doc(texts, u) for u in units]
        emb = self._encode_cached(ns, f"retrieval-doc-s{int(cfg.index_source and cfg.dense_source)}-c{cfg.dense_context_turns}", dense_docs)

        def enc_names(names: list[str]) -> np.ndarray:
            return self._encode_cached(ns, "retrieval-names", names)

        attributes = AttributeIndex(units, enc_names, cfg.attr_time_fallback_utterance)
        names: dict[str, str] = {}
        for u in units:
            for e in [*u.entities, u.speaker]:
                if e and len(e) > 2:
                    names.setdefault(e.lower(), e)
        row_of = {u.id: i for i, u in enumerate(units)}
        trace_rows: dict[int, list[int]] = {}
        for tr in traces:
            rows = [row_of[x] for x in tr.unit_ids if x in row_of]
            for r in rows:
                trace_rows[r] = [x for x in rows if x != r]
        latest, update = trace_rows_of(units, traces)
        turns = None
        if conversation is not None and ({"turn-lexical", "turn-dense"} & set(cfg.channels) or self._wants_turns()):
            pairs = dated_turns(conversation)
            turn_ids, turn_docs = [t.id for t, _ in pairs], [d for _, d in pairs]
            dense_turns = "turn-dense" in cfg.channels or self._wants_turns()
            vecs = self._encode_cached(ns, "turns", turn_docs) if dense_turns else None
            turns = TurnIndex.build(turn_ids, turn_docs, units, vecs, cfg.lexical_max_postings)
        self._index[ns] = _ConvIndex(
            units=units, texts=texts, lexical=LexicalIndex(docs, max_postings=cfg.lexical_max_postings),
            dense=DenseIndex(emb if len(units) else np.zeros((0, self.embedder.dim), np.float32), cfg.ann_threshold,
                             cfg.hnsw_m, cfg.hnsw_ef_construction, cfg.hnsw_ef_search, ivf_spec(cfg)),
            attributes=attributes, names=names, max_name_words=max((len(n.split()) for n in names), default=1),
            row_of=row_of, trace_rows=trace_rows, turns=turns, latest_row=latest, update_row=update,
            graph=ag.load_or_build(self.store, ns, units) if cfg.graph.enabled else None,
        )

    def _dense_doc(self, texts: UnitTexts, u: AtomicUnit) -> str:
        """What the dense channel embeds for a unit; a unit that is a whole turn is embedded as the turn
        document, so the unit and turn-dense channels (and the dense baseline) share one vector."""
        cfg = self.cfg
        whole = texts.whole_turn(u)
        if whole is not None and not cfg.dense_context_turns:
            return turn_document(whole, texts.date(u))
        return texts.index_text(u, cfg.index_source and cfg.dense_source, cfg.dense_context_turns, cfg.context_chars)

    def release(self, namespace: str) -> None:
        """Drop a conversation's in-memory index (the store keeps everything)."""
        self._index.pop(namespace, None)

    # ---- activation ----

    def _known_names(self, idx: _ConvIndex, text: str) -> list[str]:
        words = re.findall(r"[\w'-]+", text.lower())
        found: dict[str, None] = {}
        for n in range(1, min(idx.max_name_words, 4) + 1):
            for i in range(len(words) - n + 1):
                g = " ".join(words[i:i + n])
                if g in idx.names:
                    found.setdefault(idx.names[g], None)
        return list(found)

    def activate(self, question: Question, k: int | None = None) -> WorkingMemory:
        t0 = time.perf_counter()
        cfg = self.cfg
        k = cfg.k if k is None else k
        if k <= 0:
            raise ValueError(f"k must be positive, got {k}")
        ns = question.conversation_id
        if not ns:
            raise ValueError(f"{self.name}: question {question.id!r} names no conversation (conversation_id is empty)")
        if ns not in self._index:
            raise KeyError(f"{self.name}: question {question.id!r} names conversation {ns!r}, which was not built "
                           f"(built: {sorted(self._index)[:5]})")
        idx = self._index[ns]
        meta: dict[str, object] = {"namespace": ns}
        text = question.text or ""
        if not text.strip():
            raise ValueError(f"question {question.id!r} has an empty text")
        if len(text) > cfg.max_query_chars:
            text = text[:cfg.max_query_chars]
            meta["query_truncated_from_chars"] = len(question.text)
        if not idx.units:
            meta.update(empty_memory=True, latency_ms=(time.perf_counter() - t0) * 1000)
            return WorkingMemory(question=question, items=[], method=self.name, context_tokens=0, meta=meta)

        # the encoding's wall time (a cached vector costs ~0 here) is replaced by its own measured cost
        view, encode_ms, t_skip = self._pool(idx, text, question.question_time, meta)
        meta["encode_ms"] = encode_ms
        rows, scores = self._rerank(idx, view, meta)
        if cfg.use_traces and cfg.state_order and idx.latest_row:
            tense = question_tense(text)
            meta["tense"] = tense
            rows, scores = reorder(rows, scores, idx.units, idx.latest_row, tense, idx.update_row)
        items = self._select(idx, rows, scores, k)
        wm = WorkingMemory(question=question, items=items, method=self.name, meta=meta)
        wm.context_tokens = context_tokens(self, wm)
        meta["latency_ms"] = (time.perf_counter() - t0 - t_skip) * 1000 + encode_ms
        return wm

    def pool(self, question: Question) -> PoolView:
        """The question's fused candidate pool with the channel evidence behind it (training data for
        the learned ranker reads this; `activate` reranks and selects from it)."""
        idx = self._index[question.conversation_id]
        return self._pool(idx, (question.text or "")[:self.cfg.max_query_chars], question.question_time, {})[0]

    def pool_example(self, question: Question) -> tuple[PoolView, np.ndarray, list[list[str]]]:
        """(pool, its feature matrix, each row's turn span): what `rerank.kind: learned` scores for this
        question and what its training data records."""
        view = self.pool(question)
        idx = self._index[question.conversation_id]
        spans = [list(idx.units[r].turn_ids) for r in view.rows]
        return view, pool_features(idx, view, self.cfg.channel_depth), spans

    def _pool(self, idx: _ConvIndex, text: str, question_time: str | None,
              meta: dict[str, object]) -> tuple[PoolView, float, float]:
        """(pool view, query-encoding milliseconds, the encoding's wall seconds here): constraints ->
        channels -> RRF -> trace expansion."""
        cfg = self.cfg
        c = self.parser.parse(text, question_time, self._known_names(idx, text))
        meta["constraints"] = {"entities": c.entities, "location": c.location, "time": [c.time_start, c.time_end],
                               "source": c.source}
        gp = ag.plan(text, c.entities, idx.graph, cfg.graph) if idx.graph is not None else None
        t_enc = time.perf_counter()
        qv, encode_ms = encode_question(self.embedder, text, [*c.entities, *([c.location] if c.location else [])],
                                        idx.attributes.name_vector)
        t_enc = time.perf_counter() - t_enc
        view = PoolView(text=text, constraints=c, qvec=qv[0], rows=[], fused=np.zeros(0))
        ranked = self._channels(idx, c, text, qv, view)
        lists, weights = {ch: ranked[ch] for ch in cfg.channels if ch in ranked}, cfg.channel_weights
        if gp is not None and gp.persons and gp.person_weight and idx.graph is not None:
            pv = ag.without_names(qv[0], [qv[1 + j] for j in gp.name_entities], cfg.graph.name_weight)
            full = (lambda: matvec(idx.dense.matrix, pv)) if idx.dense.kind == "exact" else None
            lists["person"] = ag.person_ranking(idx.graph, gp.persons, lambda rows: idx.dense.scores_for(pv, rows),
                                                lambda n: idx.dense.search(pv, n), cfg.graph.person_depth,
                                                scores_all=full)
            weights = {**weights, "person": gp.person_weight}
        meta["channel_sizes"] = {kk: len(v) for kk, v in {**ranked, **lists}.items()}
        pool = rrf(lists, cfg.rrf_k, weights, cfg.pool_size)
        if cfg.use_traces and idx.trace_rows:
            pool = self._expand_traces(idx, pool)
        view.rows = [r for r, _ in pool]
        view.fused = np.asarray([s for _, s in pool], dtype=np.float64)
        if gp is not None and idx.graph is not None:
            meta["graph"] = {"persons": gp.persons, "aggregate": gp.aggregate}
            if gp.spread_weight:
                g = cfg.graph
                act = idx.graph.spread(view.rows, view.fused, g.seeds, idx.graph.key_weights(g.edges, g.max_key_units))
                view.rows, view.fused = ag.blend(view.rows, view.fused, act, gp.spread_weight)
        return view, encode_ms, t_enc

    def _channels(self, idx: _ConvIndex, c: QueryConstraints, text: str, qv: np.ndarray,
                  view: PoolView) -> dict[str, Ranked]:
        """Each channel's ranked list; raw scores and ranks go into `view`. The turn channels run whenever
        the turn index exists (fused only when listed in `channels`; the learned ranker reads them)."""
        cfg = self.cfg
        depth = cfg.channel_depth
        hits: dict[str, list[tuple[int, float]]] = {}
        out: dict[str, Ranked] = {}
        if idx.turns is not None:
            for ch, found in (("turn-lexical", idx.turns.lexical_hits(text, depth)),
                              ("turn-dense", idx.turns.dense_hits(qv[0], depth))):
                groups = idx.turns.groups(found)
                out[ch] = groups
                view.turn_scores[ch] = dict(found)
                view.ranks[ch] = {}
                for rank, g in enumerate(groups):
                    for r in g:
                        view.ranks[ch].setdefault(r, rank)
        if "lexical" in cfg.channels:
            hits["lexical"] = idx.lexical.search(text, depth)
        if "dense" in cfg.channels:
            hits["dense"] = idx.dense.search(qv[0], depth)
        if "attribute" in cfg.channels and not c.empty():
            ne = len(c.entities)
            ent_vecs = [qv[1 + j] for j in range(ne)]
            loc_vec = qv[1 + ne] if c.location else None
            tie: Callable[[np.ndarray], np.ndarray] = lambda rows: idx.dense.scores_for(qv[0], rows)
            hits["attribute"] = idx.attributes.search(c, ent_vecs, loc_vec, cfg.attr_threshold, depth, tie,
                                                      cfg.attr_max_matches, cfg.attr_max_df_share)
        for ch, found in hits.items():
            out[ch] = [i for i, _ in found]
            view.scores[ch] = dict(found)
            view.ranks[ch] = {i: rank for rank, (i, _) in enumerate(found)}
        return out

    def _expand_traces(self, idx: _ConvIndex, pool: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """Add the other members of pooled units' traces just below them (state trajectories, latest state)."""
        have = {r for r, _ in pool}
        extra: list[tuple[int, float]] = []
        for r, s in pool:
            for o in idx.trace_rows.get(r, []):
                if o not in have:
                    have.add(o)
                    extra.append((o, s * 0.5))
        merged = sorted(pool + extra, key=lambda x: -x[1])
        return merged[: self.cfg.pool_size]

    def _wants_turns(self) -> bool:
        """The learned ranker (and its training data) reads the turn channels even when they are not fused."""
        return self.turn_features or isinstance(self.reranker, PoolRanker)

    def _rerank(self, idx: _ConvIndex, view: PoolView, meta: dict[str, object]) -> tuple[list[int], list[float]]:
        rows, fused = view.rows, view.fused
        if isinstance(self.reranker, NoReranker) or not rows:
            return rows, fused.tolist()
        if isinstance(self.reranker, PoolRanker):
            rs = self.reranker.score_features(pool_features(idx, view, self.cfg.channel_depth))
            order = np.argsort(-rs, kind="stable")
            meta["reranked"] = len(rows)
            return [rows[i] for i in order], [float(rs[i]) for i in order]
        n = min(self.cfg.rerank.top_n, len(rows))
        meta["reranked"] = n
        docs = [idx.texts.candidate_document(idx.units[r], self.cfg.use_traces) for r in rows[:n]]
        rs = np.asarray(self.reranker.score(view.text, docs), dtype=np.float64)
        norm = lambda a: (a - a.min()) / (a.max() - a.min()) if len(a) and a.max() > a.min() else np.zeros_like(a)
        w = self.cfg.rerank.weight
        head = w * norm(rs) + (1 - w) * norm(fused[:n])
        order = np.argsort(-head, kind="stable")
        new_rows = [rows[i] for i in order] + rows[n:]
        new_scores = [float(head[i]) + 1.0 for i in order] + [float(x) for x in norm(fused)[n:] - 1.0]
        return new_rows, new_scores

    def _select(self, idx: _ConvIndex, rows: list[int], scores: list[float], k: int) -> list[MemoryItem]:
        """Top-k units by `select_spans`."""
        chosen = [(rows[i], scores[i]) for i in select_spans([idx.units[r].turn_ids for r in rows], k)]
        items = []
        for j, (r, s) in enumerate(chosen):
            u = idx.units[r]
            items.append(MemoryItem(
                label=f"M{j + 1}", kind="unit", text=u.text, turn_ids=list(u.turn_ids), score=float(s), unit=u,
                source_text=idx.texts.source(u),
                trajectory=idx.texts.trajectory(u) if self.cfg.use_traces else [],
                meta={"superseded": u.superseded, "date": idx.texts.date(u)},
            ))
        return items


def select_spans(spans: list[list[str]], k: int) -> list[int]:
    """Positions of the first k spans in ranking order, skipping a span whose turns are all covered by those
    chosen before it (its turns are shown anyway); skipped ones fill up when fewer than k remain."""
    chosen: list[int] = []
    skipped: list[int] = []
    covered: set[str] = set()
    for i, span in enumerate(spans):
        if span and set(span) <= covered:
            skipped.append(i)
            continue
        chosen.append(i)
        covered.update(span)
        if len(chosen) == k:
            break
    return chosen + skipped[: k - len(chosen)]


def QGMemMethod(store: object | None, llm: ChatBackend | None = None, name: str = "qgmem-text",
                **options: object) -> QGMemRetriever:
    """Registry entry (`qgmem.methods`): options are `RetrievalConfig` fields, checked by name."""
    from qgmem.config import from_dict

    cfg = from_dict(RetrievalConfig, dict(options), where=f"method_options.{name}")
    return QGMemRetriever(store, cfg, llm=llm, name=name)
