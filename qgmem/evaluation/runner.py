"""The evaluation loop: build each method's memory per conversation, activate, answer, score,
append one JSONL line per question, then summarise and report.

Resumable: a question whose line is already in ``predictions.jsonl`` is skipped, and every number
in the summary is recomputed from the JSONL files, so an interrupted and resumed run reports the
same scores as an uninterrupted one.
"""

from __future__ import annotations

import copy
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tqdm import tqdm

from qgmem.answer import context_tokens, count_tokens, item_tokens
from qgmem.evaluation.config import EvalConfig
from qgmem.evaluation.metrics import answer_scores
from qgmem.evaluation.runs import (BUILDS, PREDICTIONS, done_keys, failure_recorded, finish_run, open_run,
                                  question_key)
from qgmem.evaluation.subset import load_benchmark, select
from qgmem.io import append_jsonl
from qgmem.llm.base import ChatBackend, Usage
from qgmem.types import Conversation, MemoryMethod, Question, WorkingMemory


def _usage_snapshot(backend: ChatBackend | None) -> dict[str, dict[str, Any]]:
    return copy.deepcopy(backend.usage.as_dict()) if backend is not None else {}


def usage_delta(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per-phase difference of two `Usage.as_dict()` snapshots (phases without calls left out)."""
    out: dict[str, dict[str, Any]] = {}
    for phase, a in after.items():
        b = before.get(phase, {})
        d = {k: a[k] - b.get(k, 0) for k in a}
        if d.get("calls", 0):
            out[phase] = d
    return out


def merge_usage(*parts: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for part in parts:
        for phase, d in part.items():
            tgt = out.setdefault(phase, {})
            for k, v in d.items():
                tgt[k] = tgt.get(k, 0) + v
    return out


def _retrieval_scores(method: MemoryMethod, wm: WorkingMemory, q: Question, k: int,
                      budget: int) -> dict[str, float] | None:
    """Retrieval metrics of one working memory; budget recall charges each entry as the answer prompt shows it."""
    from qgmem.evaluation.retrieval_metrics import score_question

    items = [list(it.turn_ids) for it in wm.items]
    s = score_question(items, q.evidence, k, item_tokens(method, wm), budget)
    if s is None:
        return None
    return {"recall": s.recall, "all_hit": s.all_hit, "precision": s.precision, "ndcg": s.ndcg,
            "budget_recall": s.budget_recall}


class Evaluator:
    """Holds the backends and the run folder for one `EvalConfig`."""

    def __init__(self, cfg: EvalConfig, answer_backend: ChatBackend | None = None,
                 judge_backend: ChatBackend | None = None, resume: bool = False, show_progress: bool = True, command: str | None = None):
        self.cfg = cfg
        self.command = command
        self.run_dir, self.resumed = open_run(cfg, resume=resume)
        self._answer_backend = answer_backend
        self._judge_backend = judge_backend
        self.show_progress = show_progress

    @property
    def answer_backend(self) -> ChatBackend:
        if self._answer_backend is None:
            from qgmem.llm import make_backend

            self._answer_backend = make_backend(self.cfg.answer.llm)
        return self._answer_backend

    @property
    def judge_backend(self) -> ChatBackend | None:
        if not self.cfg.judge.enabled:
            return None
        if self._judge_backend is None:
            from qgmem.llm import make_backend

            self._judge_backend = make_backend(self.cfg.judge.llm)
        return self._judge_backend

    def _make_method(self, name: str) -> MemoryMethod:
        from qgmem.methods import make_method, spec

        store = self.cfg.store_dir or str(self.run_dir / "store")
        opts = dict(self.cfg.method_options.get(name, {}))
        llm = self.answer_backend if spec(name).uses_llm else None  # only methods that construct/parse with it
        return make_method(name, store=store, llm=llm, **opts)

    def run(self, conversations: list[Conversation] | None = None) -> dict[str, Any]:
        """Answer and score every selected question not yet in the JSONL; return the summary."""
        with failure_recorded(self.run_dir):
            return self._run(conversations)

    def _run(self, conversations: list[Conversation] | None) -> dict[str, Any]:
        from qgmem.evaluation.judge import Judge
        from qgmem.evaluation.report import write_outputs

        cfg = self.cfg
        convs = conversations if conversations is not None else load_benchmark(cfg)
        selection = select(convs, cfg.subset)
        n_q = sum(len(qs) for _, qs in selection)
        if n_q == 0:
            raise ValueError(f"{cfg.benchmark}: the subset selects no question ({cfg.subset})")
        pred_path = self.run_dir / PREDICTIONS
        done = done_keys(pred_path)
        print(f"[evaluate] {cfg.benchmark}: {len(selection)} conversation(s), {n_q} question(s) x "
              f"{len(cfg.methods)} method(s); run {self.run_dir} ({len(done)} already done)", flush=True)
        jb = self.judge_backend
        judge = Judge(jb, cfg.benchmark, cfg.judge.repeats, cfg.judge.parse_retries,
                      cfg.judge.max_tokens) if jb is not None else None
        for name in cfg.methods:
            method = None
            for conv, qs in selection:
                todo = [q for q in qs if (name, question_key(conv.id, q.id)) not in done]
                if not todo:
                    continue
                if method is None:
                    method = self._make_method(name)
                ab = self._answer_backend if method.answers_itself else self.answer_backend
                before = _usage_snapshot(ab)
                t0 = time.perf_counter()
                method.build(conv)
                build_s = time.perf_counter() - t0
                append_jsonl(self.run_dir / BUILDS, [{"method": name, "conversation_id": conv.id, "seconds": build_s,
                                                     "usage": usage_delta(before, _usage_snapshot(ab))}])
                bar = tqdm(total=len(todo), desc=f"{name} {conv.id}", disable=not self.show_progress, leave=False)
                step = max(1, cfg.answer.batch_size)
                for s in range(0, len(todo), step):
                    chunk = todo[s : s + step]
                    recs = self._chunk(name, method, conv, chunk, ab, judge)
                    append_jsonl(pred_path, recs)  # one fsynced append per chunk, one line per question
                    bar.update(len(chunk))
                bar.close()
                method.release(conv.id)
        finish_run(self.run_dir)
        return write_outputs(self.run_dir, cfg, self.command)

    def _chunk(self, name: str, method: MemoryMethod, conv: Conversation, chunk: list[Question], ab: ChatBackend | None,
               judge: Any) -> list[dict[str, Any]]:
        """Activate each question, answer the chunk together, score, judge (judge calls in parallel)."""
        from qgmem.evaluation.coverage import semantic_coverage
        from qgmem.answer import generate_answers

        cfg = self.cfg
        jb = self.judge_backend
        activated: list[tuple[Question, WorkingMemory]] = []
        ret_usage: list[dict[str, dict[str, Any]]] = []
        ret_secs: list[float] = []
        for q in chunk:
            before = _usage_snapshot(ab)
            t0 = time.perf_counter()
            activated.append((q, method.activate(q, k=cfg.k)))
            ret_secs.append(time.perf_counter() - t0)
            ret_usage.append(usage_delta(before, _usage_snapshot(ab)))
        answers = generate_answers(method, activated, ab, max_tokens=cfg.answer.max_tokens,
                                   with_graph=cfg.answer.with_graph, max_context_tokens=cfg.answer.max_context_tokens)
        recs: list[dict[str, Any]] = []
        for (q, wm), ans, r_s, r_u in zip(activated, answers, ret_secs, ret_usage):
            gen = {"calls": 1, "failed": int(ans.error is not None), "cached": int(ans.cached), "prompt_tokens": ans.prompt_tokens,
                   "completion_tokens": ans.completion_tokens, "seconds": ans.seconds}
            rec: dict[str, Any] = {
                "method": name, "qid": question_key(conv.id, q.id), "question_id": q.id, "conversation_id": conv.id, "category": str(q.category),
                "question": q.text, "references": list(q.answers), "prediction": ans.prediction,
                "raw_output": ans.raw, "answer_error": ans.error, "cited": ans.cited,
                "retrieved": [{"label": it.label, "kind": it.kind, "unit_id": it.unit.id if it.unit else None,
                               "turn_ids": list(it.turn_ids), "score": float(it.score)} for it in wm.items],
                "turn_ids": wm.turn_ids(), "gold_turn_ids": list(q.evidence),
                "context_tokens": count_tokens(ans.memory_text) if not method.answers_itself
                else context_tokens(method, wm, cfg.answer.with_graph), "method_context_tokens": int(wm.context_tokens),
                "truncated": bool(wm.meta.get("truncated", False)) or ans.memory_truncated,
                "retrieval_seconds": r_s, "generation_seconds": ans.seconds,
                "scores": answer_scores(ans.prediction, list(q.answers), str(q.category), cfg.benchmark),
                "retrieval": _retrieval_scores(method, wm, q, cfg.k, cfg.retrieval_token_budget),
                "usage": merge_usage(r_u, {"generation": gen} if ab is not None else {}),
            }
            recs.append(rec)
        if judge is not None:
            before_j = _usage_snapshot(jb)

            def grade(i: int) -> None:
                rec, (q, _), ans = recs[i], activated[i], answers[i]
                if ans.error is None:
                    rec["judge"] = judge.judge(q, ans.prediction).as_dict()
                else:  # nothing to grade: the answer itself failed (counted separately)
                    rec["judge"] = {"runs": [None] * cfg.judge.repeats, "score": None,
                                    "failed_runs": cfg.judge.repeats, "reasons": ["FAILED: no answer"],
                                    "prompt": "", "parse_repairs": 0}
                if cfg.coverage.enabled and rec["scores"].get("scoring") == "answer" and ans.error is None:
                    rec["coverage"] = semantic_coverage(jb, q, ans.prediction).as_dict()

            workers = max(1, min(len(recs), getattr(jb, "max_concurrency", 1)))
            if workers == 1:
                for i in range(len(recs)):
                    grade(i)
            else:
                with ThreadPoolExecutor(workers) as pool:
                    list(pool.map(grade, range(len(recs))))
            # judge calls of a chunk run concurrently: their usage is shared out evenly per question
            jd = usage_delta(before_j, _usage_snapshot(jb))
            share = {ph: {k: v / len(recs) for k, v in d.items()} for ph, d in jd.items()}
            for rec in recs:
                rec["usage"] = merge_usage(rec["usage"], share)
        return recs


def evaluate(cfg: EvalConfig, conversations: list[Conversation] | None = None,
             answer_backend: ChatBackend | None = None, judge_backend: ChatBackend | None = None,
             resume: bool = False, show_progress: bool = True) -> tuple[Path, dict[str, Any]]:
    """Run (or resume) one evaluation; returns (run folder, summary)."""
    ev = Evaluator(cfg, answer_backend, judge_backend, resume=resume, show_progress=show_progress)
    summary = ev.run(conversations)
    return ev.run_dir, summary


__all__ = ["evaluate", "Evaluator", "usage_delta", "merge_usage", "Usage"]
