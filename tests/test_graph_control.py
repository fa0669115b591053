"""The positive-control generator: held-out names, determinism, and conditions that differ as specified."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from qgmem.testing.hash_embedder import HashEmbedder
from qgmem.training.control_eval import CONDITIONS, comparisons, condition_sets, exact_match, names_answer
from qgmem.training.graph_control import (
    SPLITS,
    ControlConfig,
    generate,
    invented_names,
    split_pools,
    training_form,
)

SMALL = ControlConfig(conversations={"train": 4, "dev": 2, "test": 3})
DIM = 32


@pytest.fixture(scope="module")
def data():
    return generate(SMALL, HashEmbedder(DIM).encode, DIM)


def test_name_and_value_pools_are_disjoint_across_splits() -> None:
    pools = split_pools(ControlConfig())
    for field in ("people", "cities", "workplaces", "pets"):
        sets = {s: set(getattr(pools[s], field)) for s in SPLITS}
        assert all(sets.values()), field
        for a in SPLITS:
            for b in SPLITS:
                if a < b:
                    assert not sets[a] & sets[b], (field, a, b)


def test_every_name_in_a_split_comes_from_its_own_pools(data) -> None:
    pools = split_pools(SMALL)
    for split, rows in data.items():
        p = pools[split]
        allowed = set(p.people) | set(p.cities) | set(p.workplaces) | set(p.pets)
        train = split_pools(SMALL)["train"]
        train_names = set(train.people) | set(train.cities) | set(train.workplaces) | set(train.pets)
        for ex in rows:
            nodes = set(ex.graph_only.graph.node_text)
            assert nodes <= allowed, (split, nodes - allowed)
            if split != "train":
                assert not nodes & train_names and ex.answer not in train_names


def test_generation_is_deterministic_and_seeded(data) -> None:
    again = generate(SMALL, HashEmbedder(DIM).encode, DIM)
    for split in SPLITS:
        assert [e.id for e in again[split]] == [e.id for e in data[split]]
        for a, b in zip(again[split], data[split]):
            assert (a.question.text, a.answer, a.old, a.conflict.memory_text) == \
                   (b.question.text, b.answer, b.old, b.conflict.memory_text)
            ga, gb = a.graph_only.graph, b.graph_only.graph
            assert ga.node_text == gb.node_text and ga.edge_text == gb.edge_text
            assert torch.equal(ga.x, gb.x) and torch.equal(ga.edge_index, gb.edge_index)
            assert torch.equal(ga.edge_attr, gb.edge_attr)
    other = generate(dataclasses.replace(SMALL, seed=1), HashEmbedder(DIM).encode, DIM)
    assert [e.question.text for e in other["test"]] != [e.question.text for e in data["test"]]
    assert invented_names(0, 50) == invented_names(0, 50) != invented_names(1, 50)


def test_the_answer_is_in_the_graph_as_the_current_state_and_only_there(data) -> None:
    for ex in data["test"]:
        g = ex.graph_only.graph
        person = ex.question.text.split()[2]
        assert ex.answer not in ex.question.text and ex.old != ex.answer
        edges = {(g.node_text[s], r, g.node_text[o]): bool(g.edge_attr[i, -1])
                 for i, ((s, o), r) in enumerate(zip(g.edge_index.t().tolist(), g.edge_text))}
        rel = ex.question.category
        assert edges[(person, rel, ex.answer)] is False  # the current state: not superseded
        assert edges[(person, rel, ex.old)] is True  # the old state, marked by the trace
        assert len(g.edge_text) == SMALL.max_edges and len({g.node_text[s] for s, _ in g.edge_index.t().tolist()}) > 1
        assert ex.graph_only.memory_text == ""  # graph only: no text at all


def test_conflict_text_shows_both_states_without_saying_which_is_current(data) -> None:
    firsts = []
    for ex in data["test"]:
        text = ex.conflict.memory_text
        assert ex.answer in text and ex.old in text
        assert "superseded" not in text and "2023" not in text and "said on" not in text
        assert torch.equal(ex.conflict.graph.edge_attr, ex.graph_only.graph.edge_attr)
        firsts.append(text.index(ex.answer) < text.index(ex.old))
    assert 0 < sum(firsts) < len(firsts)  # the current state comes first for some questions, last for others


def test_conditions_differ_as_specified(data) -> None:
    rows = data["test"]
    sets = condition_sets(rows, seed=0)
    assert tuple(sets) == CONDITIONS
    use = {n: u for n, (u, _) in sets.items()}
    assert use == {"graph only": True, "shuffled graph only": True, "no graph": False, "graph + text": True,
                   "text only": False, "shuffled graph + text": True}
    own, shuf = sets["graph only"][1], sets["shuffled graph only"][1]
    donors = {id(ex.graph_only.graph): ex for ex in rows}
    assert sorted(id(b.graph) for b in shuf) == sorted(donors)  # every graph used once
    for a, b, ex in zip(own, shuf, rows):
        assert a.question == b.question == ex.question.text and a.memory_text == b.memory_text == ""
        donor = donors[id(b.graph)]
        # another conversation's graph: never the same person's other question, whose graph holds the answer
        assert donor.question.conversation_id != ex.question.conversation_id
    for a, b in zip(sets["graph + text"][1], sets["shuffled graph + text"][1]):
        assert a.memory_text == b.memory_text != "" and b.graph is not a.graph
    assert sets["no graph"][1] == own and sets["text only"][1] == sets["graph + text"][1]


def test_training_form_mixes_graph_only_and_conflict_by_seed(data) -> None:
    forms = training_form(data["train"], SMALL, "train")
    empty = [f.memory_text == "" for f in forms]
    assert 0 < sum(empty) < len(empty)
    assert forms == training_form(data["train"], SMALL, "train")
    only = training_form(data["train"], dataclasses.replace(SMALL, graph_only_fraction=1.0), "train")
    assert all(f.memory_text == "" for f in only)


def test_exact_match_and_paired_comparisons() -> None:
    assert exact_match("Answer: the Bakery.", "bakery") == 1.0
    assert exact_match("Answer: Oslo", "Paris") == 0.0
    assert exact_match("Tavo lives in Oslo", "Oslo") == 0.0  # a sentence is not the short answer
    assert names_answer("Tavo lives in Oslo.", "Oslo", "Paris") == 1.0  # ... but it names the answer
    assert names_answer("Tavo lived in Paris, now Oslo", "Oslo", "Paris") == 0.0  # both states: no choice made
    assert names_answer("Tavo lives in Osloville", "Oslo", "Paris") == 0.0  # whole words only
    res = {"graph only": {"per_example": [1.0] * 30}, "shuffled graph only": {"per_example": [0.0] * 30}}
    d = comparisons(res, seed=0)["graph only - shuffled graph only"]
    assert d["mean"] == d["low"] == d["high"] == 1.0


def test_bad_config_is_refused() -> None:
    with pytest.raises(ValueError, match="conversations"):
        ControlConfig(conversations={"train": 1, "test": 1})
    with pytest.raises(ValueError, match="people"):
        ControlConfig(people=1)


def test_every_design_of_the_bench_is_a_train_config_the_checks_accept() -> None:
    """bench/graph_control.py trains each design with the control config + its overrides; the schedule checks
    (warm-up, validations, saves) must accept each for the control's 400 training questions."""
    import importlib.util
    from pathlib import Path

    from qgmem.model.encoder import EncoderConfig
    from qgmem.training.config import load_train_config, validate_config

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("graph_control_bench", root / "bench" / "graph_control.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert set(bench.DEFAULT_DESIGNS) <= set(bench.DESIGNS) and "mean_pool" in bench.DEFAULT_DESIGNS
    for name, overrides in bench.DESIGNS.items():
        cfg = load_train_config(str(root / bench.CONFIG), None, [*overrides, "plan.train_examples=400"])
        validate_config(cfg)
        assert isinstance(cfg.encoder, EncoderConfig), name
    assert load_train_config(str(root / bench.CONFIG), None, bench.DESIGNS["mean_pool"]).encoder == EncoderConfig(
        hidden=256, heads=4, layers=2, dropout=0.1, num_graph_tokens=1, projector_hidden=1024)
