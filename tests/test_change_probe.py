"""The traces' change probe (construct/change_probe.py): a change told in words no rule reads links the state it
changes in a build; questions, states told again and an assistant's words link nothing; the scoring in chunks per
speaker links what the rule read one pair at a time links; the ablation is the rules alone; the checkpoint
round-trips and its digest names the traces' build key; a refit is reproducible."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from qgmem.config import load_config
from qgmem.construct import change_probe
from qgmem.construct.build import BuildConfig, build_memory
from qgmem.construct.change_probe import (ChangeProbe, ProbeCheckpointError, ProbeReadings, ProbeSpec, TurnReadings,
                                          probe_digest, probe_links)
from qgmem.construct.traces import TraceConfig
from qgmem.store import MemoryStore
from qgmem.types import AtomicUnit, Conversation, Session, Turn

OLD = "I swim with the harbour club at Pennock every Thursday evening."
NEW = "Not any more. I took my towel home from the harbour club in June and haven't been back."


def _chat(old: str, new: str, speaker: str = "Wren") -> Conversation:
    return Conversation(id="c1", speakers=["Wren", "Pilar", "assistant"], questions=[], sessions=[
        Session("S1", "2024-03-02", [Turn("D1:1", "Pilar", "How are things, Wren?"), Turn("D1:2", speaker, old),
                                     Turn("D1:3", "Pilar", "Oh nice. Tell me more some time.")]),
        Session("S2", "2024-09-14", [Turn("D2:1", "Pilar", "Long time! What's new?"), Turn("D2:2", speaker, new),
                                     Turn("D2:3", "Pilar", "Good for you.")])])


def _changed(conv: Conversation, probe: str | None = "checkpoints/change-probe") -> list[tuple[str, str]]:
    """(superseded turn, the turn of the update after it) of a build."""
    units, traces = build_memory(conv, config=BuildConfig(traces=TraceConfig(change_probe=probe)))
    by = {u.id: u for u in units}
    return sorted((by[e].first_turn, by[uid].first_turn) for t in traces
                  for k, (uid, role) in enumerate(zip(t.unit_ids, t.roles)) if role == "update"
                  for e in t.unit_ids[:k] if by[e].superseded)


def test_a_change_no_rule_reads_links_the_state_it_changes() -> None:
    assert _changed(_chat(OLD, NEW), probe="") == []  # the rules alone (the ablation) read no change here
    assert load_config(BuildConfig, None, ["traces.change_probe="]).traces.change_probe is None  # `--set` turns it off
    assert _changed(_chat(OLD, NEW), probe=None) == []
    assert _changed(_chat(OLD, NEW)) == [("D1:2", "D2:2")]


@pytest.mark.parametrize("new", [
    "Did you hear I took my towel home from the harbour club in June?",  # a question
    "I still take my towel to the harbour club in June, as ever.",  # the state told again
])
def test_questions_and_states_told_again_link_nothing(new: str) -> None:
    assert _changed(_chat(OLD, new)) == []


def _readings(units_conv: Conversation, change: float, state: float, pair: bool = True) -> tuple[list, ProbeReadings]:
    """Rule units of a chat and hand-set readings: D2:2 reads as a change, D1:2 as a state, and the pair head reads
    D2:2 as changing D1:2's state (or not). Vectors of two dimensions: a change's pair logit with a turn is
    4 x the turn's first coordinate - 2."""
    units, _ = build_memory(units_conv, config=BuildConfig(traces=TraceConfig(change_probe="")))
    spec = ProbeSpec("minilm", change_floor=0.8, state_floor=0.5, pair_floor=0.3)
    ids = [t.id for t in units_conv.turns()]
    n = len(ids)
    read = TurnReadings(np.zeros(n), np.zeros(n), np.tile([4.0, 0.0, -2.0], (n, 1)), np.tile([0.0, 1.0, 1.0], (n, 1)))
    new, old = ids.index("D2:2"), ids.index("D1:2")
    read.change[new] = change
    read.state[old], read.told[old, 0] = state, (1.0 if pair else 0.0)
    return units, ProbeReadings(spec, ids, read, {t.id: t.text for t in units_conv.turns()})


def _linked_turns(units: list, links: dict[int, tuple[int, str]]) -> list[tuple[str, str]]:
    return sorted((units[i].first_turn, units[j].first_turn) for i, (j, _) in links.items())


def test_probe_links_need_each_floor_and_the_speakers_own_words() -> None:
    plain = "I moved my towel and my weekends to the lido at Ferrow."
    units, r = _readings(_chat(OLD, plain), change=0.9, state=0.9)
    assert _linked_turns(units, probe_links(units, r, set())) == [("D2:2", "D1:2")]
    assert probe_links(units, r, {i for i, u in enumerate(units) if u.first_turn == "D2:2"}) == {}  # rules read it
    for change, state, pair in ((0.7, 0.9, True), (0.9, 0.4, True), (0.9, 0.9, False)):
        units, r = _readings(_chat(OLD, plain), change, state, pair)
        assert probe_links(units, r, set()) == {}
    units, r = _readings(_chat(OLD, plain, speaker="assistant"), change=0.9, state=0.9)
    assert probe_links(units, r, set()) == {}  # an assistant tells no state of its own


def _many_turns(seed: int, speakers: tuple[str, ...], sessions: int = 6, per_session: int = 60
                ) -> tuple[list[AtomicUnit], ProbeReadings]:
    """One unit per turn of a long chat and random readings (vectors of 8 dimensions), with many changes, states and
    pairs over the floors: more change turns than one scoring chunk."""
    rng = np.random.default_rng(seed)
    units, ids, texts = [], [], {}
    for s in range(1, sessions + 1):
        for j in range(1, per_session + 1):
            tid, who = f"D{s}:{j}", speakers[int(rng.integers(len(speakers)))]
            ids.append(tid)
            texts[tid] = f"I moved the stall {tid} to the market on the hill."
            units.append(AtomicUnit(id=f"u{len(units)}", namespace="c", session_id=f"S{s}", text=texts[tid],
                                    first_turn=tid, last_turn=tid, turn_ids=[tid], speaker=who, subject=who,
                                    relation="move", object="the stall"))
    n, d = len(ids), 8
    x = rng.normal(size=(n, d))
    read = TurnReadings(rng.uniform(0.5, 1.0, n), rng.uniform(0.2, 1.0, n),
                        np.hstack([x * rng.normal(size=d), np.full((n, 1), 0.5)]), np.hstack([x, np.ones((n, 1))]))
    return units, ProbeReadings(ProbeSpec("minilm", 0.8, 0.4, 0.3), ids, read, texts)


def _all_pairs(units: list[AtomicUnit], r: ProbeReadings) -> list[tuple[str, str]]:
    """The rule read directly, one change turn at a time against every earlier turn: (change turn, the earlier-session
    turn of the same speaker it links: the best state x pair over the floors, the latest on a tie)."""
    spec, read, out = r.spec, r.read, []
    for k in range(len(units)):
        if read.change[k] < spec.change_floor or units[k].speaker == "assistant":
            continue
        best, target = -1.0, None
        for p in range(k):
            pair = float(read.pair(np.array([k]), np.array([p]))[0, 0])
            if (units[p].speaker == units[k].speaker and units[p].session_id != units[k].session_id
                    and read.state[p] >= spec.state_floor and pair >= spec.pair_floor
                    and read.state[p] * pair >= best):
                best, target = read.state[p] * pair, p
        if target is not None:
            out.append((units[k].first_turn, units[target].first_turn))
    return sorted(out)


@pytest.mark.parametrize("speakers", [("Wren", "Pilar"), ("Wren", "Pilar", "Oskar"), ("user", "assistant")])
@pytest.mark.parametrize("chunk", [256, 16])
def test_probe_links_score_each_speakers_own_turns_as_the_rule_reads(speakers: tuple[str, ...], chunk: int,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`probe_links` scores each speaker's changes against that speaker's earlier stated turns only, in chunks: the
    links are those of the rule read one pair at a time."""
    monkeypatch.setattr(change_probe, "CHUNK", chunk)
    for seed in range(3):
        units, r = _many_turns(seed, speakers)
        links = probe_links(units, r, set())
        assert len(links) > 20
        assert _linked_turns(units, links) == _all_pairs(units, r)
        assert list(links) == sorted(links)  # emitted in dialogue order


def test_checkpoint_round_trips_and_its_digest_changes_with_it(tmp_path: Path) -> None:
    probe = ChangeProbe.load(Path(__file__).resolve().parents[1] / "checkpoints" / "change-probe")
    x = np.random.default_rng(0).normal(size=(5, 384)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    probe.save(tmp_path / "p")
    again = ChangeProbe.load(tmp_path / "p")
    assert again.read(x).change == pytest.approx(probe.read(x).change, abs=1e-6)
    assert again.read(x).pair(np.arange(5), np.arange(5)) == pytest.approx(
        probe.read(x).pair(np.arange(5), np.arange(5)), abs=1e-6)
    before = probe_digest(str(tmp_path / "p"))
    spec = json.loads((tmp_path / "p" / "probe.json").read_text())
    (tmp_path / "p" / "probe.json").write_text(json.dumps({**spec, "change_floor": 0.9}))
    probe_digest.cache_clear()
    assert probe_digest(str(tmp_path / "p")) != before  # a retrained probe regroups stored traces
    (tmp_path / "p" / "probe.safetensors").unlink()
    with pytest.raises(ProbeCheckpointError, match="train-change-probe"):
        ChangeProbe.load(tmp_path / "p")


def test_a_stored_memory_reads_its_turn_vectors_back(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "s") as st:
        build_memory(_chat(OLD, NEW), store=st)
        got = st.get_embeddings("c1", "turns-probe")
    assert got is not None and got[1].shape == (6, 384)


def test_refit_is_reproducible(tmp_path: Path) -> None:
    from qgmem.training.change_probe_fit import fit_logistic

    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 8))
    y = (x[:, 0] + 0.1 * rng.normal(size=200) > 0).astype(int)
    w1, b1 = fit_logistic(x, y, 1.0)
    w2, b2 = fit_logistic(x, y, 1.0)
    assert np.array_equal(w1, w2) and b1 == b2
    assert np.mean((x @ w1 + b1 > 0) == y) > 0.9


def test_the_pair_heads_data_are_each_updates_candidates_with_its_own_state_the_one_positive() -> None:
    from qgmem.testing.update_fixtures import load_update_fixtures
    from qgmem.training.change_probe_fit import fixture_turns

    folder = Path(__file__).resolve().parent / "fixtures" / "updates"
    turns = fixture_turns([str(folder)])
    cases = load_update_fixtures(folder / "conversations.json")
    speaker = [t.speaker for c in cases for t in c.conversation.turns()]  # the rows of `turns`
    assert len(speaker) == len(turns.texts)
    own = 0
    for c in cases:
        by_id = {t.id: t for t in c.conversation.turns()}
        own += sum(by_id[u.old].speaker == by_id[u.new].speaker for u in c.updates)
    assert sum(y for _, _, y in turns.pairs) == own > 0
    for k, p, y in turns.pairs:  # a candidate is the change speaker's, told before it
        assert p < k and speaker[p] == speaker[k]
        assert turns.change[k] and (turns.state[p] or not y)


def test_a_state_the_rules_saw_change_is_not_the_probes_target() -> None:
    """The probe links the best state the rules left unchanged: a state the rules already supersede has its change."""
    conv = _chat(OLD, "I moved my towel and my weekends to the lido at Ferrow.")
    conv.sessions[0].turns[0] = Turn("D1:1", "Wren", "I sell tickets at the harbour kiosk in Pennock.")
    units, r = _readings(conv, change=0.9, state=0.9)
    first = r.ids.index("D1:1")
    r.read.state[first], r.read.told[first, 0] = 0.6, 1.0  # a weaker state the change may change too than D1:2
    assert _linked_turns(units, probe_links(units, r, set())) == [("D2:2", "D1:2")]
    changed = {i for i, u in enumerate(units) if u.first_turn == "D1:2"}
    assert _linked_turns(units, probe_links(units, r, set(), changed)) == [("D2:2", "D1:1")]


def test_a_shared_image_is_neither_a_change_nor_a_state() -> None:
    """A picture's caption describes the picture, not the speaker's state: a turn that is only an image links nothing,
    and a turn with words and an image links by its words."""
    plain = "I moved my towel and my weekends to the lido at Ferrow."
    conv = _chat("Look at this!", plain)
    conv.sessions[0].turns[1].image_caption = "a photo of a swimming pool with a diving board"
    units, r = _readings(conv, change=0.9, state=0.9)
    assert [u.shows_image for u in units if u.first_turn == "D1:2"] == [True]
    assert probe_links(units, r, set()) == {}
    conv = _chat(OLD, plain)
    conv.sessions[0].turns[1].image_caption = "a photo of a swimming pool with a diving board"
    units, r = _readings(conv, change=0.9, state=0.9)
    (i, (j, _)), = probe_links(units, r, set()).items()
    assert units[j].first_turn == "D1:2" and not units[j].shows_image and not units[i].shows_image
