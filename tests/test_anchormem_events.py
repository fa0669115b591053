"""AnchorMem event graph: the pruning rule at its boundary, dedupe by context, single-context
clusters, empty input, and the integration parser on the prompt's own output format."""

from __future__ import annotations

import numpy as np
import pytest

from qgmem.anchormem.events import (
    EventStats, build_events, concat_event, find_clusters, integration_messages, is_redundant,
    parse_event_reply, redundancy_threshold,
)
from qgmem.anchormem.prompts import load_prompt
from qgmem.anchormem.units import Chunk, Fact
from qgmem.llm import ScriptedBackend


def group_embeddings(groups: list[int], dim: int = 16, spread: float = 0.05) -> np.ndarray:
    """Facts of the same group get near-identical unit vectors (sim ~0.99), other groups orthogonal."""
    rng = np.random.default_rng(0)
    rows = []
    for k, g in enumerate(groups):
        v = np.zeros(dim)
        v[g] = 1.0
        v += spread * rng.standard_normal(dim) * (k + 1) / len(groups)
        rows.append(v / np.linalg.norm(v))
    return np.asarray(rows, dtype=np.float32)


def test_redundancy_threshold_is_ceil_half_n() -> None:
    assert [redundancy_threshold(n) for n in (1, 2, 3, 4, 5, 6)] == [1, 1, 2, 2, 3, 3]


@pytest.mark.parametrize("n,chunks,redundant", [
    (3, ["C1", "C1", "C2"], True),   # exactly ceil(3/2) = 2 in one context -> discarded
    (3, ["C1", "C2", "C3"], False),  # one less -> kept
    (5, ["C1", "C1", "C1", "C2", "C3", "C4"], True),  # exactly 3 -> discarded
    (5, ["C1", "C1", "C2", "C3", "C4", "C5"], False),  # 2 -> kept
    (3, [], False),
])
def test_is_redundant_boundary(n: int, chunks: list[str], redundant: bool) -> None:
    assert is_redundant(chunks, n) is redundant


def test_find_clusters_n3_boundary() -> None:
    # group 0: facts 0,1 share context A, fact 2 in B -> every seed sees 2 facts of A -> discarded
    # group 1: facts 3,4,5 in three contexts -> kept (and the three seeds give one identical set)
    groups = [0, 0, 0, 1, 1, 1]
    chunks = ["A", "A", "B", "C", "D", "E"]
    clusters, st = find_clusters(group_embeddings(groups), chunks, tau=0.85, n_neighbors=3)
    assert st.candidate_clusters == 6
    assert st.discarded_clusters == 3
    assert [c.members for c in clusters] == [[3, 4, 5]]
    assert st.duplicate_clusters == 2 and st.retained_clusters == 1
    # without identical-set dedupe every retaining seed makes its own cluster
    clusters2, st2 = find_clusters(group_embeddings(groups), chunks, tau=0.85, n_neighbors=3,
                                   dedupe_identical=False)
    assert len(clusters2) == 3 and st2.duplicate_clusters == 0


def test_find_clusters_n5_keeps_two_per_context_and_dedupes_by_context() -> None:
    # six similar facts: context A holds 2 (one less than ceil(5/2) = 3) -> kept, A appears once
    groups = [0] * 6
    chunks = ["A", "A", "B", "C", "D", "E"]
    clusters, st = find_clusters(group_embeddings(groups), chunks, tau=0.5, n_neighbors=5)
    assert st.discarded_clusters == 0
    assert clusters, "cluster with a context holding ceil(N/2)-1 facts must be kept"
    for cl in clusters:
        ctx = [chunks[j] for j in cl.members]
        assert len(ctx) == len(set(ctx)) == 5  # one fact per context
        assert cl.seed in cl.members  # the seed represents its own context
    # now A holds 3 of the 6 -> exactly ceil(5/2) -> every cluster discarded
    clusters3, st3 = find_clusters(group_embeddings(groups), ["A", "A", "A", "C", "D", "E"], tau=0.5, n_neighbors=5)
    assert clusters3 == [] and st3.discarded_clusters == 6


def test_single_context_cluster_makes_no_event() -> None:
    # N=5: two similar facts of the same context: O_max = 2 < 3 so the rule keeps it, but after the
    # dedupe one context is left: nothing to associate -> counted, no cluster
    clusters, st = find_clusters(group_embeddings([0, 0, 1]), ["A", "A", "B"], tau=0.85, n_neighbors=5)
    assert clusters == []
    assert st.single_context_clusters == 2 and st.isolated_facts == 1 and st.discarded_clusters == 0


def test_tau_is_strict_and_isolated_facts_counted() -> None:
    emb = np.asarray([[1.0, 0.0], [0.75, 0.4375 ** 0.5], [0.0, 1.0]], dtype=np.float32)
    assert float(emb[0] @ emb[1]) == 0.75
    _, st = find_clusters(emb, ["A", "B", "C"], tau=0.75, n_neighbors=3)
    assert st.candidate_clusters == 0 and st.isolated_facts == 3  # sim must be > tau, not >=
    clusters, st_lo = find_clusters(emb, ["A", "B", "C"], tau=0.74, n_neighbors=3)
    assert st_lo.candidate_clusters == 2 and st_lo.isolated_facts == 1
    assert [c.members for c in clusters] == [[0, 1]] and st_lo.duplicate_clusters == 1


def test_top_n_limits_neighbours() -> None:
    chunks = ["A", "B", "C", "D", "E", "F"]
    emb = group_embeddings([0] * 6)
    for n in (1, 2):  # ceil(N/2) = 1: any cluster is redundant (the paper's rule taken literally)
        clusters, st = find_clusters(emb, chunks, tau=0.5, n_neighbors=n)
        assert clusters == [] and st.discarded_clusters == 6
    for n in (3, 4):
        clusters, _ = find_clusters(emb, chunks, tau=0.5, n_neighbors=n, dedupe_identical=False)
        assert len(clusters) == 6 and all(len(c.members) == n + 1 for c in clusters)


def test_empty_input() -> None:
    clusters, st = find_clusters(np.zeros((0, 8), dtype=np.float32), [], tau=0.85, n_neighbors=3)
    assert clusters == [] and st.facts == 0 and st.discarded_clusters == 0
    stats = EventStats()
    assert build_events([], [], [], ["A"], llm=ScriptedBackend([]), stats=stats) == []
    assert stats.events == 0 and stats.llm.calls == 0
    with pytest.raises(ValueError, match="embeddings"):
        find_clusters(np.zeros((2, 8), dtype=np.float32), ["A"], tau=0.85, n_neighbors=3)


def _facts_and_chunks() -> tuple[list[Fact], list[Chunk]]:
    chunks = [Chunk(f"S{i}#0", f"S{i}", i, [f"D{i}:1", f"D{i}:2"], f"[day {i}]\nAlice: text {i}", None)
              for i in range(3)]
    facts = [Fact(f"F{i}", f"Alice fact {i}", chunks[i].id, [f"D{i}:1"], i, "Alice", "rule") for i in range(3)]
    return facts, chunks


def test_parse_event_reply_on_the_prompts_own_format() -> None:
    # the format line of prompts/integrate_event.txt, filled in, must parse
    tmpl = load_prompt("integrate_event")
    fmt = next(line for line in tmpl.splitlines() if line.startswith('{"event"'))
    assert parse_event_reply(fmt.replace("<one to three sentences>", "Alice adopted Rex in May.")) == \
        "Alice adopted Rex in May."
    # usual damage from small models is repaired
    assert parse_event_reply('Sure! ```json\n{"event": "Alice moved to Seattle.",}\n```') == "Alice moved to Seattle."
    assert parse_event_reply('"Alice moved."') == "Alice moved."
    # parenthesised text is not an event (the official parser's mistake)
    for bad in ["(Alice moved to Seattle)", '{"summary": "x"}', '{"event": ""}', '{"event": ["a"]}', ""]:
        with pytest.raises(ValueError):
            parse_event_reply(bad)


def test_build_events_llm_repairs_and_records_failures() -> None:
    from qgmem.anchormem.events import Cluster

    facts, chunks = _facts_and_chunks()
    clusters = [Cluster(0, [0, 1]), Cluster(1, [1, 2]), Cluster(2, [0, 2])]

    def reply(req) -> str:
        text = req.messages[0]["content"]
        if "Alice fact 0" in text and "Alice fact 1" in text:
            return '{"event": "Alice did 0 and 1."}'
        if "Alice fact 1" in text:  # bad first, repaired on the re-ask
            return '{"event": "Alice did 1 and 2."}' if len(req.messages) > 1 else "no json here"
        return "(bad)"  # never parseable -> recorded after one retry

    llm = ScriptedBackend(reply)
    failures: list[tuple[str, str, str]] = []
    stats = EventStats()
    events = build_events(clusters, facts, chunks, ["Alice"], llm=llm, retries=1,
                          on_failure=lambda k, e, r: failures.append((k, e, r)), stats=stats)
    assert [e.text for e in events] == ["Alice did 0 and 1.", "Alice did 1 and 2."]
    assert events[1].fact_ids == ["F1", "F2"] and events[1].chunk_ids == ["S1#0", "S2#0"]
    assert events[0].turn_ids == ["D0:1", "D1:1"] and events[0].integrator == "llm"
    assert stats.failed_events == 1 and stats.repaired_replies == 1 and stats.events == 2
    assert stats.llm.calls == 5 and stats.llm.prompt_tokens > 0
    assert len(failures) == 1 and "seed=F2" in failures[0][0] and failures[0][2] == "(bad)"
    # the integration prompt pairs each fact with its raw context
    prompt = llm.requests[0].messages[0]["content"]
    assert "Fact 1: Alice fact 0" in prompt and "Alice: text 1" in prompt


def test_build_events_concat_without_llm_and_chunk_turns() -> None:
    from qgmem.anchormem.events import Cluster

    facts, chunks = _facts_and_chunks()
    stats = EventStats()
    events = build_events([Cluster(2, [0, 2])], facts, chunks, ["Alice"], llm=None, event_turns="chunks",
                          stats=stats)
    assert events[0].text == concat_event([facts[0], facts[2]]) == "Alice fact 0. Alice fact 2."
    assert events[0].integrator == "concat" and stats.integrator == "concat"
    assert events[0].turn_ids == ["D0:1", "D0:2", "D2:1", "D2:2"]


def test_build_events_resumes_from_checkpoint() -> None:
    from qgmem.anchormem.events import Cluster

    facts, chunks = _facts_and_chunks()
    clusters = [Cluster(0, [0, 1]), Cluster(1, [1, 2])]
    llm = ScriptedBackend(['{"event": "second"}'])
    saved: list[dict[int, str]] = []
    events = build_events(clusters, facts, chunks, ["Alice"], llm=llm, done={0: "first"},
                          checkpoint=lambda d: saved.append(dict(d)))
    assert [e.text for e in events] == ["first", "second"]
    assert len(llm.requests) == 1 and saved[-1] == {0: "first", 1: "second"}


def test_integration_messages_fill_every_slot() -> None:
    facts, chunks = _facts_and_chunks()
    content = integration_messages([(chunks[0], facts[0])], ["Alice", "Bob"])[0]["content"]
    assert "{{" not in content and "Alice and Bob" in content


def test_max_clusters_caps_and_counts() -> None:
    emb = group_embeddings([0, 0, 0, 1, 1, 1])
    chunks = ["A", "B", "C", "D", "E", "F"]
    clusters, st = find_clusters(emb, chunks, tau=0.85, n_neighbors=3, dedupe_identical=False, max_clusters=2)
    assert len(clusters) == 2 and st.retained_clusters == 6 and st.skipped_clusters == 4
