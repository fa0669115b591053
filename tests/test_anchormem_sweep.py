"""`qgmem anchormem-sweep` on a small conversation: one row per (tau, N) with the Table-6 counts,
Markdown + JSON written, integration calls/tokens counted through the HTTP backend."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from qgmem.testing.openai_server import OpenAIServer
from qgmem.anchormem.config import AnchorMemConfig
from qgmem.anchormem.sweep import sweep
from qgmem.cli import main as cli_main
from qgmem.llm import ScriptedBackend
from qgmem.store import MemoryStore
from qgmem.types import Conversation, to_dict

from test_anchormem_method import FACTS, reply_text


def test_sweep_rows_follow_tau_and_n(tmp_path: Path, tiny_conversation: Conversation) -> None:
    llm = ScriptedBackend(lambda req: reply_text(req.messages[0]["content"]))
    base = AnchorMemConfig(extractor="llm")
    rows = sweep([tiny_conversation], base, MemoryStore(tmp_path / "s"), [0.70, 0.80, 0.95], [3, 5], llm=llm)
    assert [(r["tau"], r["n"]) for r in rows] == [(0.7, 3), (0.8, 3), (0.95, 3), (0.7, 5), (0.8, 5), (0.95, 5)]
    by = {(r["tau"], r["n"]): r for r in rows}
    n_facts = sum(len(v) for v in FACTS.values())
    assert all(r["facts"] == n_facts for r in rows)
    # facts are extracted once (6 chunks) whatever the setting; integration only where events form
    extraction = [q for q in llm.requests if "extract atomic facts" in q.messages[0]["content"]]
    assert len(extraction) == 6
    assert by[(0.7, 3)]["events"] == 2 and by[(0.7, 3)]["event_llm_calls"] == 2
    assert by[(0.7, 3)]["event_llm_tokens"] > 0 and by[(0.7, 3)]["integrator"] == "llm"
    assert by[(0.95, 3)]["events"] == 0 and by[(0.95, 3)]["event_llm_calls"] == 0
    # a higher threshold never forms more candidate clusters
    for n in (3, 5):
        cands = [by[(t, n)]["candidate_clusters"] for t in (0.70, 0.80, 0.95)]
        assert cands == sorted(cands, reverse=True)
    for r in rows:
        c = r
        assert c["candidate_clusters"] + c["isolated_facts"] == c["facts"]
        assert c["candidate_clusters"] == (c["discarded_clusters"] + c["single_context_clusters"]
                                           + c["duplicate_clusters"] + c["retained_clusters"])


def test_sweep_cli_writes_markdown_and_json(tmp_path: Path, tiny_conversation: Conversation) -> None:
    conv_path = tmp_path / "conv.json"
    conv_path.write_text(json.dumps(to_dict(tiny_conversation)))
    cfg_path = tmp_path / "am.yaml"
    with OpenAIServer(lambda req: reply_text(req["messages"][0]["content"])) as srv:
        cfg_path.write_text(
            "extractor: llm\nllm:\n  backend: openai\n"
            f"  base_url: {srv.base_url}\n  model: test-model\n  cache: false\n")
        rc = cli_main(["anchormem-sweep", "--conversation-json", str(conv_path), "--config", str(cfg_path),
                       "--taus", "0.7", "0.9", "--ns", "3", "5", "--out", str(tmp_path / "out")])
        served = len(srv.requests)
    assert rc == 0
    result = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert result["conversations"] == ["c1"] and len(result["rows"]) == 4
    r = next(r for r in result["rows"] if r["tau"] == 0.7 and r["n"] == 3)
    assert r["events"] == 2 and r["fact_llm_calls"] == 6 and r["total_llm_calls"] == 8
    assert served == 6 + sum(row["event_llm_calls"] for row in result["rows"])
    md = (tmp_path / "out" / "sweep.md").read_text()
    assert "| τ | N | facts |" in md and "| 0.70 | 3 | 11 |" in md and md.count("\n| 0.") == 4
