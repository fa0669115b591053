"""`qgmem anchormem-sweep`: event-graph statistics over tau x N (the shape of AnchorMem's Table 6).

Facts are built once per conversation (persisted in the store, resumable), then for each setting
the clusters are re-formed, pruned and integrated in memory (events are not embedded or stored:
the sweep measures the graph, it does not serve questions); the table reports per setting the
facts, candidate / discarded / retained clusters, events, and integration LLM calls and tokens,
summed over the conversations. Without an LLM the integration is the deterministic "concat" one
(0 calls) and the "would-be calls" column says how many integrations the LLM path would make.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any

from ..io import atomic_write_json, atomic_write_text
from ..types import Conversation
from tqdm import tqdm

from .config import AnchorMemConfig
from .events import EventStats, build_events, find_clusters

DEFAULT_TAUS = [0.70, 0.80, 0.85, 0.90, 0.95]
DEFAULT_NS = [3, 5]


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--benchmark", default="locomo", choices=["locomo"], help="benchmark to load (QGMEM_DATA_DIR)")
    src.add_argument("--conversation-json", type=Path, help="a Conversation as JSON (qgmem.types dict form)")
    p.add_argument("--conversations", nargs="*", default=None, help="conversation ids (default: all)")
    p.add_argument("--max-conversations", type=int, default=None)
    p.add_argument("--max-sessions", type=int, default=None, help="keep only the first sessions (quick runs)")
    p.add_argument("--taus", type=float, nargs="+", default=DEFAULT_TAUS)
    p.add_argument("--ns", type=int, nargs="+", default=DEFAULT_NS)
    p.add_argument("--config", type=Path, default=None, help="AnchorMemConfig YAML (tau/n_neighbors are swept)")
    p.add_argument("--set", dest="overrides", nargs="*", default=[], help="AnchorMemConfig overrides a.b=value")
    p.add_argument("--store", type=Path, default=None, help="MemoryStore directory (default: OUT/store)")
    p.add_argument("--out", type=Path, required=True, help="output directory for sweep.json and sweep.md")


def load_conversations(args: argparse.Namespace) -> list[Conversation]:
    from ..data.registry import load_conversations_json, select_conversations

    if args.conversation_json is not None:
        convs = load_conversations_json(args.conversation_json)
    else:
        from ..data.locomo import load_locomo

        convs = load_locomo()
    convs = select_conversations(convs, args.conversations)
    if args.max_conversations is not None:
        convs = convs[: args.max_conversations]
    if args.max_sessions is not None:
        convs = [dataclasses.replace(c, sessions=c.sessions[: args.max_sessions]) for c in convs]
    return convs


def _row(tau: float, n: int, per_conv: list[dict[str, Any]]) -> dict[str, Any]:
    row: dict[str, Any] = {"tau": tau, "n": n, "conversations": len(per_conv)}
    keys_c = ["facts", "isolated_facts", "candidate_clusters", "discarded_clusters", "single_context_clusters",
              "duplicate_clusters", "retained_clusters"]
    for k in keys_c:
        row[k] = sum(m["event_stats"]["clusters"][k] for m in per_conv)
    row["events"] = sum(m["event_stats"]["events"] for m in per_conv)
    row["failed_events"] = sum(m["event_stats"]["failed_events"] for m in per_conv)
    row["integrator"] = per_conv[0]["event_stats"]["integrator"] if per_conv else ""
    for k in ("calls", "cached", "prompt_tokens", "completion_tokens"):
        row[f"event_llm_{k}"] = sum(m["event_stats"]["llm"][k] for m in per_conv)
        row[f"fact_llm_{k}"] = sum(m["fact_stats"].get("llm", {}).get(k, 0) for m in per_conv)
    row["event_llm_tokens"] = row["event_llm_prompt_tokens"] + row["event_llm_completion_tokens"]
    row["fact_llm_tokens"] = row["fact_llm_prompt_tokens"] + row["fact_llm_completion_tokens"]
    row["total_llm_calls"] = row["event_llm_calls"] + row["fact_llm_calls"]
    return row


def markdown(rows: list[dict[str, Any]], header: str = "") -> str:
    cols = [("τ", "tau"), ("N", "n"), ("facts", "facts"), ("candidate clusters", "candidate_clusters"),
            ("discarded", "discarded_clusters"), ("single-context", "single_context_clusters"),
            ("duplicate", "duplicate_clusters"), ("events", "events"), ("failed events", "failed_events"),
            ("integration calls", "event_llm_calls"), ("integration tokens", "event_llm_tokens"),
            ("total LLM calls (facts + events)", "total_llm_calls")]
    lines = [header] if header else []
    lines.append("| " + " | ".join(c for c, _ in cols) + " |")
    lines.append("|" + "---|" * len(cols))
    for r in rows:
        cells = [f"{r[k]:.2f}" if k == "tau" else str(r[k]) for _, k in cols]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def sweep(convs: list[Conversation], base: AnchorMemConfig, store: Any, taus: list[float], ns: list[int],
          llm: Any = None) -> list[dict[str, Any]]:
    """Facts once per conversation (persisted in `store`), then the event graph under every (tau, N)
    in memory; one aggregated row per setting. LLM integrations are not checkpointed per setting:
    with the response cache on (LLMConfig.cache) a rerun replays finished calls for free."""
    from .method import AnchorMemMethod

    method = AnchorMemMethod(store, base, llm=llm)
    integrate_llm = method.llm if method.integrates_with_llm else None
    settings = [(tau, n) for n in ns for tau in taus]
    per_setting: dict[tuple[float, int], list[dict[str, Any]]] = {s: [] for s in settings}
    for conv in tqdm(convs, desc="anchormem sweep", unit="conv", disable=len(convs) < 2):
        stage = method.build_facts(conv)
        fact_chunks = [f.chunk_id for f in stage.facts]
        for tau, n in settings:
            clusters, cstats = find_clusters(stage.fact_emb, fact_chunks, tau, n, base.dedupe_identical_clusters,
                                             max_clusters=base.max_clusters)
            es = EventStats(clusters=cstats)
            build_events(clusters, stage.facts, stage.chunks, stage.speakers, llm=integrate_llm,
                         max_tokens=base.event_max_tokens, retries=base.llm_retries, event_turns=base.event_turns,
                         on_failure=lambda key, err, raw, t=tau, n_=n, c=conv.id: store.record_failure(
                             c, f"sweep:tau={t}:N={n_}:{key}", err, raw),
                         save_every=base.save_every, stats=es)
            per_setting[(tau, n)].append({"fact_stats": stage.fact_stats, "event_stats": es.as_dict()})
    return [_row(tau, n, per_setting[(tau, n)]) for tau, n in settings]


def run(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..store import MemoryStore

    base = load_config(AnchorMemConfig, args.config, args.overrides)
    convs = load_conversations(args)
    if not convs:
        raise SystemExit("anchormem-sweep: no conversations selected")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store = MemoryStore(args.store or out / "store")
    t0 = time.perf_counter()
    rows = sweep(convs, base, store, list(args.taus), list(args.ns))
    seconds = time.perf_counter() - t0
    result = {"conversations": [c.id for c in convs], "config": dataclasses.asdict(base),
              "rows": rows, "seconds": round(seconds, 2)}
    atomic_write_json(out / "sweep.json", result)
    integ = rows[0]["integrator"] if rows else ""
    header = (f"AnchorMem event-graph sweep over {len(convs)} conversation(s), extractor={base.extractor}, "
              f"integrator={integ}, chunk_turns={base.chunk_turns}\n")
    md = markdown(rows, header)
    atomic_write_text(out / "sweep.md", md)
    print(md)
    print(f"wrote {out / 'sweep.json'} and {out / 'sweep.md'} ({seconds:.1f} s)")
    return 0
