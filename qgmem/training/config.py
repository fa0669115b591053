"""The train YAML as dataclasses: `TrainConfig` and its sections, loaded with `load_train_config`.

Everything about how examples are built (graph settings, working-memory size, retrieval) lives in
the prepare YAML that ``data.prepare`` names; the trainer reads those settings back from the
prepared set's ``prepare_meta.json``, so no value is stated twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from qgmem.config import ConfigError, apply_overrides, from_dict, load_config, read_yaml
from qgmem.model.encoder import EncoderConfig

DTYPES = ("float32", "bfloat16", "float16")


@dataclass
class LoraSettings:
    enabled: bool = False
    r: int = 8
    alpha: int = 16
    dropout: float = 0.05
    target_modules: list[str] = field(default_factory=lambda: ["q_proj", "v_proj"])

    def as_peft(self) -> dict[str, Any] | None:
        """The `GraphTokenLM(lora=...)` dict, or None when LoRA is off."""
        if not self.enabled:
            return None
        return {"r": self.r, "lora_alpha": self.alpha, "lora_dropout": self.dropout,
                "target_modules": list(self.target_modules)}


@dataclass
class ModelConfig:
    name: str = "smollm2"  # local path, hub id, or "smollm2" (packaged GGUF, via qgmem.llm.local_model_path)
    dtype: str = "float32"  # weights of the frozen LLM: float32 on CPU, bfloat16 on GPU
    # recompute the LLM's layer activations in backward instead of keeping them (8B at 4k tokens needs it)
    gradient_checkpointing: bool = False
    lora: LoraSettings = field(default_factory=LoraSettings)


@dataclass
class DataConfig:
    dir: str = "checkpoints/prepared/longmemeval_s_cpu"  # prepared set, written by `qgmem prepare`
    prepare: str | None = None  # the prepare YAML that builds `dir` (configs/prepare/*.yaml)
    max_length: int = 1024  # tokens per example (memory text is cut to fit, the answer never)
    system: str | None = None  # system prompt of the answer prompt (None = qgmem.answer.DEFAULT_SYSTEM)
    # probability that a training example is shown without its memory text (graph token only); 0 = never
    text_dropout: float = 0.0
    max_train_examples: int | None = None
    max_val_examples: int | None = None
    max_test_examples: int | None = None

    def prepare_command(self) -> str:
        """The command that writes the prepared set this config trains on."""
        cfg = self.prepare or "configs/prepare/<dataset>.yaml"
        return f"qgmem prepare --config {cfg} --out {self.dir}"


@dataclass
class OptimConfig:
    lr: float = 1e-4
    weight_decay: float = 0.05
    betas: list[float] = field(default_factory=lambda: [0.9, 0.95])
    # linear warm-up, in optimizer steps or as a fraction of the total steps (0.05 = 5%); state one
    # (neither: 10 steps); qgmem/training/schedule.py places it and refuses one that reaches the total
    warmup_steps: int | None = None
    warmup_fraction: float | None = None
    min_lr_ratio: float = 0.1  # cosine decays to lr * min_lr_ratio
    grad_accum: int = 1
    clip: float = 1.0  # max grad norm (0 = off)
    epochs: int = 1
    max_steps: int | None = None  # optimizer steps; overrides epochs when set
    batch_size: int = 4  # micro-batch per process
    eval_batch_size: int = 8
    seed: int = 42


@dataclass
class EvalConfig:
    # validate every N optimizer steps (and at the end), or after every fraction of the total steps; state one
    # (neither: every 50 steps); a schedule that validates fewer than 3 times after step 0 is refused
    every: int | None = None
    every_fraction: float | None = None
    metric: str = "loss"  # best checkpoint by "loss" (lower) or "f1" (higher)
    gen_examples: int = 0  # token F1 via generate on this many validation examples (0 = off)
    max_new_tokens: int = 24
    test: bool = True  # final test-split report (graph+text / text only / shuffled graph)
    test_gen_examples: int | None = None  # generate on this many test examples (None = all)


@dataclass
class WandbConfig:
    enabled: bool = False
    project: str = "qgmem"
    mode: str = "offline"  # "offline" works without network; "online" to sync
    run_name: str | None = None


@dataclass
class PlanConfig:
    """What the run is expected to see, stated so that its schedule can be printed and checked before the
    prepared set exists (`validate_config`, ``train.py --estimate-only``); when train.py runs it uses the
    real counts instead (the prepared train split, the launched processes)."""

    train_examples: int | None = None  # train examples of the prepared set (None: known once it is prepared)
    processes: int = 1  # data-parallel processes (GPUs) the run is launched with
    # expected wall seconds per optimizer step on the target GPUs (None: the save cadence is not checked)
    step_seconds: float | None = None


@dataclass
class TrainConfig:
    output_dir: str = "checkpoints/run"
    mixed_precision: str = "no"  # "no" | "bf16" | "fp16" (autocast for the trainable part)
    # write output_dir/last every N optimizer steps, or after every fraction of the total steps; state one
    # (neither: every 50 steps)
    save_every: int | None = None
    save_every_fraction: float | None = None
    # last/ must be written at least this often (minutes of expected wall time, plan.step_seconds): a killed
    # or requeued job loses at most this much
    save_minutes: float = 30.0
    resume: bool = True  # continue from output_dir/last when it exists
    stop_after_steps: int | None = None  # leave the loop after N steps without a final save (a simulated kill)
    progress: bool = True
    # seconds a collective (or the rendezvous) may wait for the other processes before it fails: a dead or
    # stuck rank stops the run with an error instead of hanging it; generous, as a slow rank may be loading an 8B
    # model or writing a checkpoint while the others wait
    ddp_timeout_s: int = 1800
    model: ModelConfig = field(default_factory=ModelConfig)
    encoder: EncoderConfig = field(default_factory=EncoderConfig)  # node/edge dims come from the prepared set
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    wandb: WandbConfig = field(default_factory=WandbConfig)
    plan: PlanConfig = field(default_factory=PlanConfig)

    @property
    def ddp_timeout(self) -> timedelta:
        """`ddp_timeout_s` as `torch.distributed.init_process_group` takes it."""
        return timedelta(seconds=self.ddp_timeout_s)


def _one_of(section: str, steps: tuple[str, int | None], fraction: tuple[str, float | None], low_open: bool) -> None:
    """A cadence given as steps or as a fraction of the total, not both, each in its range."""
    (sn, sv), (fn, fv) = steps, fraction
    if sv is not None and fv is not None:
        raise ConfigError(f"{section}{sn} ({sv}) and {section}{fn} ({fv}) are both stated; state one")
    if sv is not None and sv < (1 if low_open else 0):
        raise ConfigError(f"{section}{sn}: expected an integer >= {1 if low_open else 0}, got {sv}")
    if fv is not None and not ((0.0 < fv <= 1.0) if low_open else (0.0 <= fv < 1.0)):
        rng = "(0, 1]" if low_open else "[0, 1)"
        raise ConfigError(f"{section}{fn}: expected a fraction of the total steps in {rng}, got {fv}")


def validate_config(cfg: TrainConfig) -> None:
    """Refuse a config that cannot run as meant, in one line naming the field; with ``plan.train_examples``
    stated this includes its schedule (qgmem/training/schedule.py)."""
    from qgmem.training.schedule import check_schedule, plan_schedule

    if cfg.model.dtype not in DTYPES:
        raise ConfigError(f"model.dtype: expected one of {DTYPES}, got {cfg.model.dtype!r}")
    if cfg.eval.metric not in ("loss", "f1"):
        raise ConfigError(f"eval.metric: expected 'loss' or 'f1', got {cfg.eval.metric!r}")
    if cfg.eval.metric == "f1" and cfg.eval.gen_examples <= 0:
        raise ConfigError("eval.metric=f1 needs eval.gen_examples > 0")
    if cfg.ddp_timeout_s <= 0:
        raise ConfigError(f"ddp_timeout_s: expected a positive number of seconds, got {cfg.ddp_timeout_s}")
    if not 0.0 <= cfg.data.text_dropout < 1.0:
        raise ConfigError(f"data.text_dropout: expected a probability in [0, 1), got {cfg.data.text_dropout}")
    if cfg.optim.grad_accum < 1 or cfg.optim.batch_size < 1:
        raise ConfigError("optim.grad_accum and optim.batch_size must be >= 1")
    o, p = cfg.optim, cfg.plan
    _one_of("optim.", ("warmup_steps", o.warmup_steps), ("warmup_fraction", o.warmup_fraction), low_open=False)
    _one_of("eval.", ("every", cfg.eval.every), ("every_fraction", cfg.eval.every_fraction), low_open=True)
    _one_of("", ("save_every", cfg.save_every), ("save_every_fraction", cfg.save_every_fraction), low_open=True)
    if o.max_steps is not None and o.max_steps < 1:
        raise ConfigError(f"optim.max_steps: expected an integer >= 1, got {o.max_steps}")
    if o.max_steps is None and o.epochs < 1:
        raise ConfigError(f"optim.epochs: expected an integer >= 1, got {o.epochs}")
    if cfg.save_minutes <= 0:
        raise ConfigError(f"save_minutes: expected a positive number of minutes, got {cfg.save_minutes}")
    if p.processes < 1:
        raise ConfigError(f"plan.processes: expected an integer >= 1, got {p.processes}")
    if p.step_seconds is not None and p.step_seconds <= 0:
        raise ConfigError(f"plan.step_seconds: expected a positive number of seconds, got {p.step_seconds}")
    if p.train_examples is not None:
        if p.train_examples < 1:
            raise ConfigError(f"plan.train_examples: expected an integer >= 1, got {p.train_examples}")
        check_schedule(cfg, plan_schedule(cfg, p.train_examples, p.processes, "plan.train_examples"))


def resolve_config_path(ref: str, referrer: Path) -> Path:
    """A config file named inside another config: as given (absolute, or from the working directory),
    else relative to the naming file's folder or one of its parents (the repository root)."""
    p = Path(ref)
    if p.is_absolute() or p.exists():
        return p
    for base in [referrer.resolve().parent, *referrer.resolve().parent.parents]:
        if (base / p).exists():
            return base / p
    raise ConfigError(f"{referrer}: names config file {ref!r}, which does not exist")


def load_train_config(path: str, model_config: str | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """Train YAML (+ the model/encoder sections of a backbone YAML) + key=value overrides -> TrainConfig."""
    if model_config is None:
        return load_config(TrainConfig, path, overrides)
    data: dict[str, Any] = read_yaml(path)
    part = read_yaml(model_config)
    if set(part) - {"model", "encoder"}:
        raise ConfigError(f"{model_config}: a model config may only hold 'model' and 'encoder', got {sorted(part)}")
    data.update(part)
    apply_overrides(data, list(overrides or []))
    return from_dict(TrainConfig, data, f"{path} + {model_config}")
