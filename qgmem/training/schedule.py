"""The optimizer-step schedule of a training run, derived from its data, and the checks that refuse a
schedule that cannot do its job.

How many optimizer steps a run makes follows from the train examples, the processes, ``optim.batch_size``,
``optim.grad_accum`` and ``optim.epochs`` (or ``optim.max_steps``), exactly as `trainer.fit` walks
them. Warm-up, validation and the ``last/`` saves are placed on that count, each given either in
optimizer steps (``optim.warmup_steps``, ``eval.every``, ``save_every``) or as a fraction of the total
(``optim.warmup_fraction``, ``eval.every_fraction``, ``save_every_fraction``), so a config keeps its
shape when the data grows or shrinks. A schedule is refused (one line naming the field) when

- the warm-up reaches the total: the learning rate never leaves warm-up;
- validation runs fewer than `MIN_VALIDATIONS` times after step 0: "best on validation" would be
  the final weights (step 0, the untrained encoder, does not count);
- ``last/`` would be written less often than every ``save_minutes`` of expected wall time
  (``plan.step_seconds`` x steps between saves; not checked when the config states no step time):
  a killed or requeued job would lose more than that.

A run given ``optim.max_steps`` fixes its length by hand (smoke tests, short experiments): its
schedule is printed but not refused.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qgmem.config import ConfigError

# The functions below take a `qgmem.training.config.TrainConfig` (typed Any: that module imports this one
# for `validate_config`, and the package's folders import without cycles).
TrainConfig = Any

MIN_VALIDATIONS = 3
# cadences of a config that states neither the steps nor the fraction (the values before fractions existed)
DEFAULT_WARMUP_STEPS = 10
DEFAULT_EVAL_EVERY = 50
DEFAULT_SAVE_EVERY = 50


@dataclass(frozen=True)
class Schedule:
    """Where a run's optimizer steps go; `plan_schedule` builds it the way `trainer.fit` steps."""

    train_examples: int
    source: str  # where the example count comes from ("prepared set", "plan.train_examples")
    processes: int
    batch_size: int
    grad_accum: int
    micro_per_epoch: int  # micro-batches per process and epoch
    steps_per_epoch: int
    epochs: int | None  # None when optim.max_steps sets the total
    total_steps: int
    warmup_steps: int
    eval_every: int
    save_every: int
    step_seconds: float | None

    @property
    def examples_per_step(self) -> int:
        return self.processes * self.batch_size * self.grad_accum

    @property
    def validations(self) -> list[int]:
        """Steps after which validation runs (`trainer._after_step`), step 0 not included."""
        return [s for s in range(1, self.total_steps + 1) if s % self.eval_every == 0 or s == self.total_steps]

    @property
    def expected_seconds(self) -> float | None:
        return None if self.step_seconds is None else self.total_steps * self.step_seconds


def _cadence(steps: int | None, fraction: float | None, total: int, default: int, minimum: int) -> int:
    if fraction is not None:
        return max(minimum, int(fraction * total + 0.5))
    return default if steps is None else steps


def plan_schedule(cfg: TrainConfig, train_examples: int, processes: int, source: str) -> Schedule:
    """The schedule of `cfg` for `train_examples` examples on `processes` data-parallel processes."""
    if train_examples < 1:
        raise ConfigError(f"{source}: no train examples to schedule (all longer than data.max_length?)")
    o = cfg.optim
    micro = math.ceil(train_examples / (o.batch_size * processes))
    per_epoch = math.ceil(micro / o.grad_accum)
    total = o.max_steps if o.max_steps is not None else o.epochs * per_epoch
    return Schedule(
        train_examples=train_examples, source=source, processes=processes, batch_size=o.batch_size,
        grad_accum=o.grad_accum, micro_per_epoch=micro, steps_per_epoch=per_epoch,
        epochs=None if o.max_steps is not None else o.epochs, total_steps=total,
        warmup_steps=_cadence(o.warmup_steps, o.warmup_fraction, total, DEFAULT_WARMUP_STEPS, 0),
        eval_every=_cadence(cfg.eval.every, cfg.eval.every_fraction, total, DEFAULT_EVAL_EVERY, 1),
        save_every=_cadence(cfg.save_every, cfg.save_every_fraction, total, DEFAULT_SAVE_EVERY, 1),
        step_seconds=cfg.plan.step_seconds)


def _named(steps_field: str, fraction_field: str, fraction: float | None) -> str:
    return fraction_field if fraction is not None else steps_field


def check_schedule(cfg: TrainConfig, s: Schedule) -> None:
    """Raise `ConfigError` (one line, naming the field) when `s` cannot do its job; see the module doc."""
    if cfg.optim.max_steps is not None:
        return
    where = f"{s.total_steps} optimizer steps ({s.train_examples:,} train examples from {s.source}, " \
            f"{s.examples_per_step} per step, {s.epochs} epochs)"
    if s.warmup_steps >= s.total_steps:
        name = _named("optim.warmup_steps", "optim.warmup_fraction", cfg.optim.warmup_fraction)
        raise ConfigError(f"{name}: a warm-up of {s.warmup_steps} steps reaches the total of {where}, so the learning "
                          f"rate never leaves warm-up; use a smaller value, e.g. optim.warmup_fraction=0.05")
    val = s.validations
    if len(val) < MIN_VALIDATIONS:
        name = _named("eval.every", "eval.every_fraction", cfg.eval.every_fraction)
        most = max(1, s.total_steps // MIN_VALIDATIONS)
        raise ConfigError(f"{name}: validation runs {len(val)} time(s) after step 0 (steps {val}) in {where}, fewer "
                          f"than {MIN_VALIDATIONS}, so the best checkpoint on validation is the last one; set "
                          f"eval.every<={most} or eval.every_fraction<=0.3")
    if s.step_seconds is not None:
        gap = min(s.save_every, s.total_steps) * s.step_seconds
        if gap > cfg.save_minutes * 60:
            name = _named("save_every", "save_every_fraction", cfg.save_every_fraction)
            most = max(1, int(cfg.save_minutes * 60 // s.step_seconds))
            raise ConfigError(f"{name}: last/ is written every {min(s.save_every, s.total_steps)} steps, "
                              f"{gap / 60:.0f} minutes at plan.step_seconds={s.step_seconds:g}, less often than "
                              f"save_minutes={cfg.save_minutes:g}; a killed job would lose that much: set "
                              f"save_every<={most}")


def _how(fraction: float | None, fraction_field: str, steps_field: str, stated: int | None) -> str:
    """How a cadence was given, for the printed schedule."""
    if fraction is not None:
        return f"{fraction_field} {fraction:g}"
    return steps_field if stated is not None else f"{steps_field}, default"


def format_schedule(cfg: TrainConfig, s: Schedule) -> str:
    """The schedule in three lines, as train.py prints it before the first step."""
    o = cfg.optim
    length = (f"steps per epoch {s.steps_per_epoch} x {s.epochs} epochs = {s.total_steps} optimizer steps"
              if s.epochs is not None else
              f"steps per epoch {s.steps_per_epoch}; optim.max_steps = {s.total_steps} optimizer steps "
              f"(schedule checks off)")
    val = s.validations
    at = f"steps {val[0]}..{val[-1]}" if len(val) > 2 else f"steps {val}"
    if s.step_seconds is None:
        timing = "wall time not estimated (plan.step_seconds not stated)"
    else:
        timing = (f"~{min(s.save_every, s.total_steps) * s.step_seconds / 60:.1f} min apart at plan.step_seconds "
                  f"{s.step_seconds:g}; expected {s.expected_seconds / 60:.1f} min of training steps")
    lines = [
        f"schedule: {s.train_examples:,} train examples ({s.source}) | {s.processes} process(es) x batch_size "
        f"{s.batch_size} x grad_accum {s.grad_accum} = {s.examples_per_step} examples per optimizer step",
        f"  {length} | warm-up {s.warmup_steps} "
        f"({_how(o.warmup_fraction, 'optim.warmup_fraction', 'optim.warmup_steps', o.warmup_steps)})",
        f"  validation every {s.eval_every} steps: {len(val)} times ({at}) | last/ every {s.save_every} steps, "
        f"{timing}",
    ]
    p = cfg.plan
    if p.train_examples is not None and s.source != "plan.train_examples" and \
            (p.train_examples, p.processes) != (s.train_examples, s.processes):
        lines.append(f"  (planned for {p.train_examples:,} train examples on {p.processes} process(es); "
                     "the schedule follows the real counts)")
    return "\n".join(lines)


def planned_schedule(cfg: TrainConfig) -> Schedule | None:
    """The schedule before training: from the prepared set's train count when it exists (before the
    max_length filter), else from ``plan.train_examples``; on ``plan.processes`` processes."""
    meta_path = Path(cfg.data.dir) / "prepare_meta.json"
    if meta_path.exists():
        n = int(json.loads(meta_path.read_text()).get("counts", {}).get("train", 0))
        if cfg.data.max_train_examples is not None:
            n = min(n, cfg.data.max_train_examples)
        return plan_schedule(cfg, max(n, 1), cfg.plan.processes, f"prepared set {cfg.data.dir}")
    if cfg.plan.train_examples is not None:
        return plan_schedule(cfg, cfg.plan.train_examples, cfg.plan.processes, "plan.train_examples")
    return None


def print_schedule(cfg: TrainConfig) -> None:
    """``train.py --estimate-only``: the schedule lines (after `validate_config`), refused as train.py would."""
    schedule = planned_schedule(cfg)
    if schedule is None:
        print(f"schedule: unknown until {cfg.data.dir} is prepared (or plan.train_examples is stated)", flush=True)
        return
    check_schedule(cfg, schedule)
    print(format_schedule(cfg, schedule), flush=True)
