#!/usr/bin/env python
"""The paper recipe rehearsed on the CPU, end to end through the real entry points, in one command:

    python bench/rehearsal.py [--work runs/rehearsal_cpu] [--reduced] [--ship checkpoints/smollm2_rehearsal]
                              [--kill-after 2] [train overrides, e.g. encoder.pooling=query ...]

1. data       bench/rehearsal_data.py: LongMemEval-oracle questions outside every scored split, written as ConvoMem
              pre-mixed test cases (the paper's training unit; ConvoMem is not available here)
2. prepare    ``qgmem prepare --config configs/train/rehearsal_cpu.yaml`` (convomem-cases, answer filter with the
              frozen SmolLM2 on the train split)
3. train      ``accelerate launch --config_file configs/accelerate/cpu_2proc.yaml train.py --config
              configs/train/rehearsal_cpu.yaml``: 2 processes over gloo, gradient checkpointing, wandb offline;
              SIGKILL to the launcher and both workers once last/ holds step ``--kill-after`` (as a node failure)
4. requeue    the same command again, as Slurm's requeue runs it: it must resume from last/ at that step
5. reference  the same command, uninterrupted, into another output_dir (no test report: it comes after the
              weights); the sha256 of best/ and last/ weights must equal the requeued run's
6. evaluate   ``python evaluate.py --config configs/eval/rehearsal_checkpoint.yaml`` on the validation cases
              (through bench/capture_graph_tokens.py, which records the graph tokens every answer used)
7. parity     training's `validate` (best/ weights), the evaluate run and ``MemoryPipeline.from_pretrained(best)
              .answer(...)`` (a fresh store) give identical graph tokens (max abs difference 0) for every
              validation question, and evaluate's and the pipeline's replies are the same text

``--reduced`` (CI, ``QGMEM_REDUCED=1 pytest -m slow tests/test_rehearsal.py``): a tiny random Qwen3 for the
frozen LLM and the filter (which then keeps every case: ``answer_filter.min_f1=0``, a random model answers
nothing right), 12 cases, a small encoder. ``--ship DIR`` copies best/ with its training report and a model card
into DIR (``checkpoints/smollm2_rehearsal`` is the demo's). Everything lands under ``--work``;
``<work>/rehearsal.json`` holds the phases' wall and CPU seconds, the load average, the resume and hash evidence
and the parity numbers. Processes run at nice 10 with one torch thread each (prepare, one process, with two).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
for _k, _v in {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}.items():
    os.environ.setdefault(_k, _v)  # this process too runs models (validate, the pipeline): one thread

TRAIN = "configs/train/rehearsal_cpu.yaml"
EVAL = "configs/eval/rehearsal_checkpoint.yaml"
ACCELERATE = "configs/accelerate/cpu_2proc.yaml"
LAUNCH_BUDGET_S = 3600  # one training launch; past it the launch is killed and the rehearsal fails
# prepare is one process (the answer filter's greedy answers dominate it): two threads take it from 437 s to 294 s
# on 2 idle cores and keep the same cases, byte for byte (the prepared dataset of a 1-thread run compared equal). A fixed
# number, not the core count, so the prepared set cannot depend on the machine's size.
PREPARE_THREADS = 2
# the reduced form: a tiny Qwen3 (saved by `tiny_llm`) in place of SmolLM2, fewer cases, a small encoder
REDUCED_PREPARE = ["max_conversations=12", "answer_filter.min_f1=0.0", "answer_filter.max_tokens=4"]
# (lr 3e-3: the tiny encoder's validation loss moves, so best/ is a real choice among the steps)
REDUCED_TRAIN = ["encoder.hidden=32", "encoder.heads=2", "encoder.projector_hidden=64", "data.max_length=400", "optim.lr=3e-3",
                 "eval.gen_examples=2", "eval.max_new_tokens=4", "eval.test_gen_examples=2"]


class RehearsalFailed(AssertionError):
    """A step of the rehearsal did not do what the recipe promises."""


class Phases:
    """Wall and CPU seconds (this process + its children) of each named phase, and the load average."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    @staticmethod
    def _cpu() -> float:
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    def run(self, name: str, fn: Any, *a: Any, **kw: Any) -> Any:
        t0, c0, load0 = time.perf_counter(), self._cpu(), os.getloadavg()[0]
        print(f"[rehearsal] {name} ...", flush=True)
        out = fn(*a, **kw)
        row = {"phase": name, "wall_s": round(time.perf_counter() - t0, 1), "cpu_s": round(self._cpu() - c0, 1),
               "load_start": round(load0, 2), "load_end": round(os.getloadavg()[0], 2)}
        self.rows.append(row)
        print(f"[rehearsal] {name}: {row['wall_s']} s wall, {row['cpu_s']} s CPU (load {row['load_start']} -> "
              f"{row['load_end']})", flush=True)
        return out


def child_env(threads: int = 1) -> dict[str, str]:
    """Environment of every step: `threads` torch threads per process (one unless said: training runs two
    processes on two cores, and the three inference paths compared for parity must share one count), offline hub
    and wandb, CPU DDP over gloo."""
    return {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "false",
            "HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline", "WANDB_SILENT": "true", "ACCELERATE_USE_CPU": "1",
            "PYTHONUNBUFFERED": "1", "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def run_command(cmd: list[str], log: Path, timeout: float = LAUNCH_BUDGET_S, threads: int = 1) -> str:
    """Run `cmd` in the repository root with its output in `log`; its output, or RehearsalFailed."""
    with log.open("w") as f:
        res = subprocess.run(cmd, cwd=ROOT, env=child_env(threads), stdin=subprocess.DEVNULL, stdout=f,
                             stderr=subprocess.STDOUT, timeout=timeout)
    out = log.read_text(errors="replace")
    if res.returncode != 0:
        raise RehearsalFailed(f"{' '.join(cmd[:4])} ... exited {res.returncode} (log {log}):\n{out[-3000:]}")
    return out


def kill_tree(proc: subprocess.Popen) -> int:
    """SIGKILL the launcher and every process below it (torchrun puts its workers in sessions of their own, so a
    process-group kill would miss them); returns how many were killed."""
    import psutil

    try:
        procs = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    for p in procs:
        try:
            p.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    proc.wait()
    psutil.wait_procs(procs, timeout=60)
    return len(procs)


def last_step(out: Path) -> int:
    """The step of the complete last/ checkpoint in `out` (-1 when there is none)."""
    from qgmem.training.checkpoint import STATE, find_last

    try:
        last = find_last(out)
        return -1 if last is None else int(json.loads((last / STATE).read_text())["step"])
    except (OSError, ValueError, KeyError, RuntimeError):
        return -1  # the first copy is still being written (none complete yet)


def accelerate_cmd(overrides: list[str]) -> list[str]:
    exe = Path(sys.executable).parent / "accelerate"
    launcher = [str(exe)] if exe.exists() else [sys.executable, "-m", "accelerate.commands.accelerate_cli"]
    return [*launcher, "launch", "--config_file", ACCELERATE, "train.py", "--config", TRAIN, *overrides]


def train_killed(overrides: list[str], out: Path, log: Path, kill_after: int) -> dict[str, Any]:
    """The training launch, SIGKILLed (launcher and workers) as soon as last/ holds step `kill_after` (or a later
    one: the poll and the kill race the training, so the step actually held at the kill is what is recorded and
    what the requeued launch must resume from)."""
    with log.open("w") as f:
        proc = subprocess.Popen(accelerate_cmd(overrides), cwd=ROOT, env=child_env(), stdin=subprocess.DEVNULL,
                                stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        t0 = time.monotonic()
        try:
            while proc.poll() is None and last_step(out) < kill_after:
                if time.monotonic() - t0 > LAUNCH_BUDGET_S:
                    raise RehearsalFailed(f"training did not reach step {kill_after} in {LAUNCH_BUDGET_S} s (log {log})")
                time.sleep(0.1)  # a reduced-form step can take under a second: the kill may still land a step later
        finally:
            finished = proc.poll() is not None
            killed = 0 if finished else kill_tree(proc)
    if finished:
        raise RehearsalFailed(f"training ended (exit {proc.returncode}) before step {kill_after}; nothing to kill "
                              f"(log {log}):\n{log.read_text(errors='replace')[-3000:]}")
    return {"killed_processes": killed, "last_step_at_kill": last_step(out), "seconds_before_kill":
            round(time.monotonic() - t0, 1)}


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tiny_llm(folder: Path) -> Path:
    """The reduced form's frozen LLM: a tiny random Qwen3 with the fixture tokenizer, saved once."""
    if not (folder / "config.json").exists():
        from qgmem.testing.tiny_models import make_tiny

        llm, tok = make_tiny("qwen3", seed=0, hidden=32)
        llm.config.max_position_embeddings = 4096  # the filter's prompts hold a whole working memory (RoPE: no table)
        llm.save_pretrained(folder)
        tok.save_pretrained(folder)
    return folder


def check_resume(requeue_log: str, out: Path, killed_at: int) -> None:
    want = f"resumed from {out / 'last'}: step {killed_at},"
    if want not in requeue_log:
        raise RehearsalFailed(f"the requeued launch did not resume at step {killed_at} ('{want}' not in its log)")
    if "2 process(es)" not in requeue_log:
        raise RehearsalFailed("the requeued launch did not run on 2 processes (schedule line)")


def compare_weights(train_out: Path, ref_out: Path) -> dict[str, Any]:
    """sha256 of the best/ and last/ weights of the requeued and the uninterrupted run; they must be equal."""
    files = {"best": "best/model.safetensors", "last": "last/trainable.safetensors"}
    res = {k: {"requeued": sha256(train_out / f), "uninterrupted": sha256(ref_out / f)} for k, f in files.items()}
    a = json.loads((train_out / "report.json").read_text())
    b = json.loads((ref_out / "report.json").read_text())
    res["history_equal"] = a["history"] == b["history"]
    res["best_step"] = a["best"]["step"]
    res["steps"] = a["steps"]
    res["resumed_from"] = a["resumed_from"]
    bad = [k for k in files if res[k]["requeued"] != res[k]["uninterrupted"]]
    if bad or not res["history_equal"]:
        raise RehearsalFailed(f"kill -9 + requeue did not reproduce the uninterrupted run: weights differ in {bad}, "
                              f"history equal: {res['history_equal']}")
    return res


def code_state() -> str:
    """The commit and the uncommitted changes under qgmem/ (other people's edits land while a rehearsal runs: a
    prepared set built by other code than the evaluation is no parity failure of the recipe)."""
    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    return hashlib.sha256((git("rev-parse", "HEAD") + git("diff", "HEAD", "--", "qgmem")).encode()).hexdigest()[:16]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", default="runs/rehearsal_cpu", help="folder for everything the rehearsal writes")
    p.add_argument("--reduced", action="store_true", help="CI form: tiny Qwen3, 12 cases, small encoder")
    p.add_argument("--kill-after", type=int, default=2, help="SIGKILL the training once last/ holds this step")
    p.add_argument("--ship", default=None, help="copy best/ + report + model card into this folder")
    p.add_argument("--data-dir", default=None, help="LongMemEval files (default: $QGMEM_DATA_DIR)")
    p.add_argument("--max-chars", type=int, default=200, help="turns of the written cases cut to this many characters")
    p.add_argument("--prepare", action="append", default=[], metavar="KEY=VALUE",
                   help="prepare config override (repeatable), e.g. --prepare max_conversations=199")
    p.add_argument("--fresh", action="store_true", help="delete --work first (default: keep data and prepared set)")
    p.add_argument("--parity-only", action="store_true",
                   help="reuse <work>/train and <work>/prepared: run only evaluate.py and the parity checks")
    p.add_argument("--no-reference", action="store_true",
                   help="skip the uninterrupted reference run and the sha256 comparison (larger shipping runs)")
    p.add_argument("overrides", nargs="*", help="train config overrides, e.g. encoder.pooling=query")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from rehearsal_data import write_cases

    from qgmem.paths import data_dir as default_data_dir

    import torch

    a = parse_args(argv)
    os.nice(max(0, 10 - os.nice(0)))  # nice 10 (not more when started under nice already)
    torch.set_num_threads(1)
    work = Path(a.work).resolve()
    if a.fresh:
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    phases = Phases()
    data, prep, out, ref = work / "data", work / "prepared", work / "train", work / "reference"
    common = [f"data.dir={prep}", "progress=false", *(["model.name=" + str(tiny_llm(work / "tiny_llm"))]
                                                     if a.reduced else []), *(REDUCED_TRAIN if a.reduced else [])]
    common += list(a.overrides)
    prepare_ov = [f"data_dir={data}", f"answer_filter.llm.cache_dir={work / 'llm_cache'}"]
    if a.reduced:
        prepare_ov += REDUCED_PREPARE + [f"answer_filter.llm.model={work / 'tiny_llm'}"]
    prepare_ov += list(a.prepare)
    report: dict[str, Any] = {"argv": list(sys.argv[1:] if argv is None else argv), "work": str(work),
                              "reduced": a.reduced, "code_at_start": code_state(), "overrides": common, "prepare_overrides": prepare_ov,
                              "cpu_count": os.cpu_count(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    if a.parity_only:
        prev = json.loads((work / "rehearsal.json").read_text()) if (work / "rehearsal.json").exists() else {}
        report.update({k: prev[k] for k in ("data", "kill", "weights") if k in prev})
        report.setdefault("weights", {"best": {"requeued": sha256(out / "best" / "model.safetensors")}})
        return finish(a, report, phases, work, common, out, prep, data)
    written = json.loads((data / "rehearsal_data.json").read_text()) if (data / "rehearsal_data.json").exists() else {}
    if (written.get("context_size"), written.get("max_chars")) != (2, a.max_chars or None):
        shutil.rmtree(data, ignore_errors=True)
        written = phases.run("data", write_cases, Path(a.data_dir) if a.data_dir else default_data_dir(), data,
                             2, a.max_chars or None)
    report["data"] = written
    phases.run("prepare", run_command, [sys.executable, "-m", "qgmem.cli", "prepare", "--config", TRAIN, "--out",
                                        str(prep), *prepare_ov], work / "prepare.log", threads=PREPARE_THREADS)
    for d in (out, ref):
        shutil.rmtree(d, ignore_errors=True)
    report["kill"] = phases.run("train (killed)", train_killed, common + [f"output_dir={out}"], out,
                                work / "train_killed.log", a.kill_after)
    log = phases.run("train (requeued)", run_command, accelerate_cmd(common + [f"output_dir={out}"]),
                     work / "train_requeued.log")
    check_resume(log, out, report["kill"]["last_step_at_kill"])
    if a.no_reference:  # a shipping run of other sizes: the resume check of the standard rehearsal stands for it
        report["weights"] = {"best": {"requeued": sha256(out / "best" / "model.safetensors")},
                             "resumed_from": json.loads((out / "report.json").read_text())["resumed_from"]}
    else:
        phases.run("train (uninterrupted reference)", run_command,
                   accelerate_cmd(common + [f"output_dir={ref}", "eval.test=false"]), work / "train_reference.log")
        report["weights"] = compare_weights(out, ref)
    return finish(a, report, phases, work, common, out, prep, data)


def finish(a: argparse.Namespace, report: dict[str, Any], phases: Phases, work: Path, common: list[str], out: Path,
           prep: Path, data: Path) -> int:
    """evaluate.py, the parity checks, the shipped copy and the record."""
    from rehearsal_parity import check_parity, ship

    for d in (work / "results", work / "pipeline_store", work / "parity_validate"):
        shutil.rmtree(d, ignore_errors=True)  # every path builds its memory and answers anew
    try:
        report["parity"] = check_parity(phases, work, common, out, prep, data, run_command, EVAL, TRAIN,
                                        ["answer.max_tokens=4"] if a.reduced else [])
    except AssertionError as e:
        if code_state() != report["code_at_start"]:
            raise RehearsalFailed(f"{e}\n(qgmem/ changed while the rehearsal ran, from {report['code_at_start']} to "
                                  f"{code_state()}: rerun it on one state of the code)") from None
        raise
    if a.ship:
        report["shipped"] = str(ship(out, Path(a.ship), report, work))
    report["phases"] = phases.rows
    report["total_wall_s"] = round(sum(r["wall_s"] for r in phases.rows), 1)
    (work / "rehearsal.json").write_text(json.dumps(report, indent=2) + "\n")
    same = ("requeued == uninterrupted" if "uninterrupted" in report["weights"]["best"] else
            "weights not compared in this run (--no-reference / --parity-only)")
    print(f"[rehearsal] passed in {report['total_wall_s']} s: {same} (sha256 "
          f"{report['weights']['best']['requeued'][:12]}), graph tokens equal in validate, evaluate.py and the "
          f"pipeline for {report['parity']['questions']} validation questions -> {work / 'rehearsal.json'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
