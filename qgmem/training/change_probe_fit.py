"""`qgmem train-change-probe --config configs/traces/change_probe.yaml`: fit the traces' change probe.

The probe (qgmem/construct/change_probe.py) is two logistic heads over the MiniLM vector of a turn: "tells a
change" (the later turn of a labelled update) and "tells a state a later turn changes" (the earlier turn), and a
pair head over the product of two turns' vectors: "this change changes that turn's state" (a labelled update's two
turns, against the same speaker's other turns of the sessions before the change: the candidates the build weighs).
Data: the labelled update fixture sets named in the config (their unlabelled turns are the negatives), plus the
turns of multi-session chit-chat (MSC), which are read as changing nothing: without them a probe fitted on short
chats full of changes reads every chatty "now" of a long conversation as a change. Each head is an L2-penalised
logistic regression (penalty 1/(2C), classes weighted to equal mass) fitted by L-BFGS in float64, so a rerun writes
the same weights. The floors are the config's: chosen on development sets the probe was not fitted on (`holdout`),
with the over-linking they cost on LoCoMo's conversations (bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import platform
import shlex
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from qgmem.config import load_config
from qgmem.construct.change_probe import ChangeProbe, ProbeSpec
from qgmem.io import atomic_write_json, atomic_write_text
from qgmem.testing.update_fixtures import load_update_fixtures


@dataclass
class ChatNegatives:
    session: int = 3  # MSC episodes of this session (each holds the sessions before it)
    split: str = "valid"
    limit: int = 500  # episodes (all of session 3's valid split)


@dataclass
class ChangeProbeTrainConfig:
    out: str = "checkpoints/change-probe"
    embedder: str = "minilm"  # float32 all-MiniLM-L6-v2: no precision that depends on the CPU
    sets: list[str] = field(default_factory=list)  # fixture folders (tests/fixtures/updates*) fitted on
    holdout: list[str] = field(default_factory=list)  # of `sets`, left out of the fit and scored (choosing floors)
    chat: ChatNegatives = field(default_factory=ChatNegatives)
    c: float = 1.0  # inverse L2 penalty of each head
    change_floor: float = 0.8
    state_floor: float = 0.4
    pair_floor: float = 0.3


@dataclass
class Turns:
    texts: list[str] = field(default_factory=list)
    later: list[bool] = field(default_factory=list)  # in a session after the conversation's first
    change: list[bool] = field(default_factory=list)
    state: list[bool] = field(default_factory=list)
    # (change turn, candidate earlier turn, 1 when it is the state the change changes): rows of `texts`
    pairs: list[tuple[int, int, int]] = field(default_factory=list)

    def add(self, text: str, later: bool, change: bool = False, state: bool = False) -> None:
        self.texts.append(text)
        self.later.append(later)
        self.change.append(change)
        self.state.append(state)

    def __add__(self, other: Turns) -> Turns:
        n = len(self.texts)
        return Turns(self.texts + other.texts, self.later + other.later, self.change + other.change,
                     self.state + other.state, self.pairs + [(k + n, p + n, y) for k, p, y in other.pairs])


def fixture_turns(folders: list[str]) -> Turns:
    out = Turns()
    for folder in folders:
        for case in load_update_fixtures(Path(folder) / "conversations.json"):
            base = len(out.texts)
            turns = [(k, t) for k, s in enumerate(case.conversation.sessions) for t in s.turns]
            pos = {t.id: i for i, (_, t) in enumerate(turns)}
            new, old = {u.new for u in case.updates}, {u.old for u in case.updates}
            for k, t in turns:
                out.add(t.text, k > 0, t.id in new, t.id in old)
            for u in case.updates:  # the build's candidates: the change's speaker's turns of earlier sessions
                k, t = turns[pos[u.new]]
                if turns[pos[u.old]][1].speaker != t.speaker:
                    continue  # a change told by the other speaker: the probe never links those
                out.pairs += [(base + pos[u.new], base + i, int(c.id == u.old)) for i, (j, c) in enumerate(turns)
                              if j < k and c.speaker == t.speaker]
    return out


def chat_turns(cfg: ChatNegatives) -> Turns:
    from qgmem.data.msc import load_msc

    out = Turns()
    for conv in load_msc(session=cfg.session, split=cfg.split, limit=cfg.limit):
        for k, s in enumerate(conv.sessions):
            for t in s.turns:
                out.add(t.text, k > 0)
    return out


def fit_logistic(x: np.ndarray, y: np.ndarray, c: float) -> tuple[np.ndarray, float]:
    """(weight (d,), bias) of a logistic regression minimising sum_i w_i * loss_i + ||w||^2 / (2c), the two
    classes weighted to equal total mass; L-BFGS in float64 from zeros, so a refit gives the same bits."""
    import torch

    xt = torch.as_tensor(x, dtype=torch.float64)
    yt = torch.as_tensor(y, dtype=torch.float64)
    counts = torch.stack([(yt == 0).sum(), (yt == 1).sum()]).double()
    weight = (len(y) / (2 * counts.clamp(min=1)))[yt.long()]
    w = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], lr=1.0, max_iter=500, tolerance_grad=1e-9, tolerance_change=1e-12,
                            history_size=20, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(xt @ w + b, yt, reduction="none")
        total = (weight * loss).sum() + (w * w).sum() / (2 * c)
        total.backward()
        return total

    opt.step(closure)
    return w.detach().numpy(), float(b.detach()[0])


def fit_probe(x: np.ndarray, turns: Turns, cfg: ChangeProbeTrainConfig, info: dict[str, object]) -> ChangeProbe:
    later, change, state = (np.asarray(v) for v in (turns.later, turns.change, turns.state))
    pairs = np.asarray(turns.pairs, dtype=np.int64).reshape(-1, 3)
    data = {"change": (x[later], change[later]), "state": (x, state),
            "pair": (x[pairs[:, 0]] * x[pairs[:, 1]], pairs[:, 2])}
    weights = {}
    for name, (features, y) in data.items():
        w, b = fit_logistic(features, np.asarray(y, dtype=np.int64), cfg.c)
        weights[f"{name}.weight"], weights[f"{name}.bias"] = w, np.array([b])
    spec = ProbeSpec(cfg.embedder, cfg.change_floor, cfg.state_floor, cfg.pair_floor, info)
    return ChangeProbe(spec, weights)


def scores(probe: ChangeProbe, x: np.ndarray, turns: Turns) -> dict[str, float]:
    """Per-head figures of a probe on turns: recall of the changes and states at the floors, the share of other
    later turns read as changes, and how often the pair head ranks a labelled change's own state first among the
    candidates at its floor (`target_first`)."""
    got = probe.read(x)
    later, change, state = (np.asarray(v) for v in (turns.later, turns.change, turns.state))
    fl = probe.spec.change_floor
    firsts = []
    by_change: dict[int, list[tuple[int, int]]] = {}
    for k, p, y in turns.pairs:
        by_change.setdefault(k, []).append((p, y))
    for k, cands in by_change.items():
        pr = got.pair(np.array([k]), np.array([p for p, _ in cands]))[0]
        best = int(np.argmax(pr))
        firsts.append(cands[best][1] == 1 and pr[best] >= probe.spec.pair_floor)
    return {"turns": len(got.change), "changes": int(change.sum()),
            "change_recall": float(np.mean(got.change[change] >= fl)) if change.any() else 0.0,
            "other_later_read_as_change": float(np.mean(got.change[later & ~change] >= fl))
            if (later & ~change).any() else 0.0,
            "state_recall": float(np.mean(got.state[state] >= probe.spec.state_floor)) if state.any() else 0.0,
            "target_first": float(np.mean(firsts)) if firsts else 0.0}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", required=True, help="YAML under configs/traces/ (e.g. configs/traces/change_probe.yaml)")
    p.add_argument("overrides", nargs="*", help="key=value overrides, e.g. c=0.3 out=/tmp/probe 'holdout=[...]'")


def run(args: argparse.Namespace) -> int:
    from qgmem.embed import get_embedder

    cfg = load_config(ChangeProbeTrainConfig, args.config, args.overrides)
    t0 = time.perf_counter()
    fitted = [s for s in cfg.sets if s not in cfg.holdout]
    fit_turns = fixture_turns(fitted)
    chat = chat_turns(cfg.chat)
    held = fixture_turns(cfg.holdout) if cfg.holdout else None
    emb = get_embedder(cfg.embedder)
    print(f"encoding {len(fit_turns.texts)} fixture turns, {len(chat.texts)} chat turns"
          + (f", {len(held.texts)} held-out turns" if held else ""), file=sys.stderr)
    x_fit = emb.encode(fit_turns.texts + chat.texts, show_progress=True)
    both = fit_turns + chat
    t_fit = time.perf_counter()
    command = "qgmem train-change-probe " + shlex.join(["--config", args.config, *args.overrides])
    info: dict[str, object] = {"command": command, "sets": fitted, "holdout": cfg.holdout, "chat": asdict(cfg.chat),
                               "c": cfg.c, "embedder": emb.name}
    probe = fit_probe(x_fit, both, cfg, info)
    report = {"fit": scores(probe, x_fit[:len(fit_turns.texts)], fit_turns),
              "chat": scores(probe, x_fit[len(fit_turns.texts):], chat)}
    if held is not None:
        report["holdout"] = scores(probe, emb.encode(held.texts), held)
    info["figures"] = report
    info["machine"] = f"{platform.machine()} {platform.processor() or ''}".strip()
    info["seconds"] = {"data_and_encoding": round(t_fit - t0, 1), "fit": round(time.perf_counter() - t_fit, 1)}
    probe.save(cfg.out)
    atomic_write_json(Path(cfg.out) / "train_report.json", info)
    atomic_write_text(Path(cfg.out) / "MODEL_CARD.md", model_card(cfg, info))
    for split, r in report.items():
        print(f"{split:8s} " + "  ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items()))
    print(f"wrote {cfg.out}")
    return 0


def model_card(cfg: ChangeProbeTrainConfig, info: dict[str, object]) -> str:
    figures, sets = info["figures"], info["sets"]
    assert isinstance(figures, dict) and isinstance(sets, list)
    names = ", ".join(Path(s).name for s in sets)
    rows = "\n".join(f"| {k} | {r['turns']} | {r['changes']} | {r['change_recall']:.3f} | "
                     f"{r['other_later_read_as_change']:.3f} | {r['state_recall']:.3f} | {r['target_first']:.3f} |"
                     for k, r in figures.items())
    return f"""# Change probe ({Path(cfg.out).name})

Two logistic heads over the float32 all-MiniLM-L6-v2 vector of a turn (`qgmem/construct/change_probe.py`): does
the turn tell that a state changed, does it tell a state a later turn changes; and a third over the elementwise
product of two turns' vectors: does the later one change the earlier one's state. The traces use it where the rules
read no change (`TraceConfig.change_probe`). Weights: `probe.safetensors` (3 x 385 floats), numpy inference.
Licences: this repository's, the embedder's (Apache-2.0), and MSC's
(released by Meta through ParlAI; its terms were not checked here: treat the weights as research-only).

Reproduce: `{info['command']}`.

## Data
Fitted on the labelled update fixture sets ({len(sets)}: {names}; a turn is a change
when it is the later turn of a labelled update, a state when it is the earlier one, every other turn neither; the
pair head on each update's two turns against the change speaker's other turns of the sessions before it) and
on {cfg.chat.limit} MSC episodes (session {cfg.chat.session}, {cfg.chat.split} split), whose turns are all read as
neither. Held out of the fit: {', '.join(Path(s).name for s in cfg.holdout) or 'nothing'}.
Penalty C = {cfg.c}; floors: change {cfg.change_floor}, state {cfg.state_floor}, pair {cfg.pair_floor}.

## Figures (at the floors)
| turns of | n | changes | change recall | other later turns read as a change | state recall | own state first |
|---|---|---|---|---|---|---|
{rows}

What the traces gain and what the probe costs in over-linking: bench/RESULTS.md.
"""
