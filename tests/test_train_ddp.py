"""Two-process DDP (gloo on CPU, via torchrun): the same trainable weights and validation losses as one
process with the same global batch when answers differ in length (so only a loss weighted by answer
tokens across micro-batches and processes matches), and a kill + resume under DDP.

Built not to hang (it once ran past pytest's 600 s limit): torchrun's standalone rendezvous picks a free
port for each launch (fixed ports collide with a concurrent run and can join its rendezvous); the
process group times out after `ddp_timeout_s`, so a stuck collective fails the run; each launch has a
budget well below the pytest timeout, after which its launcher and workers (torchrun starts each worker
in a session of its own) are killed; output goes to a file, so no orphan can hold a pipe open."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import torch
from safetensors.torch import load_file
from test_train_loop import DIM, _row

from qgmem.config import load_config
from qgmem.testing.tiny_models import make_tiny
from qgmem.training.config import TrainConfig
from qgmem.training.prepared import save_prepared
from qgmem.training.trainer import train

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
ROOT = Path(__file__).resolve().parents[1]
LAUNCH_BUDGET_S = 240  # per torchrun launch; two launches + the 1-process run stay well below 600 s
DDP_TIMEOUT_S = 90  # a collective waiting longer fails the launch with an error, well within its budget
STALL_TIMEOUT_S = 15  # the stuck-rank test: short, yet far above the skew between two ranks' set-up
CONFIG = ROOT / "configs/train/smollm2_cpu.yaml"


def _overrides(llm_dir: Path, prep: Path, out: Path, batch: int) -> list[str]:
    return [f"output_dir={out}", f"model.name={llm_dir}", f"data.dir={prep}",
            "data.max_length=160", "encoder.hidden=32", "encoder.heads=2", "encoder.projector_hidden=64",
            "encoder.dropout=0.0", f"optim.batch_size={batch}", "optim.grad_accum=2", "optim.max_steps=4",
            "optim.lr=3e-3", "eval.every=2", "save_every=2", "progress=false", "eval.test=false",
            f"ddp_timeout_s={DDP_TIMEOUT_S}"]


def _kill_launch(proc: subprocess.Popen) -> None:
    """SIGKILL the launcher's process group and each worker's own session; reap them all."""
    try:
        procs = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        procs = []
    for p in procs:
        for kill in (lambda: os.killpg(os.getpgid(p.pid), signal.SIGKILL), lambda: os.kill(p.pid, signal.SIGKILL)):
            try:
                kill()
            except (ProcessLookupError, PermissionError):
                pass
    proc.wait()
    psutil.wait_procs(procs, timeout=30)


def _launch(script_args: list[str], log: Path, budget_s: float) -> tuple[int, str]:
    """One 2-process torchrun launch: (exit code, output of both ranks); killed past `budget_s` (a failure)."""
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "--max_restarts", "0", *script_args]
    with log.open("w") as f:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            proc.wait(timeout=budget_s)
        except subprocess.TimeoutExpired:
            pass
        finally:  # also when pytest's own timeout interrupts the wait
            timed_out = proc.poll() is None
            if timed_out:
                _kill_launch(proc)
    out = log.read_text()
    assert not timed_out, f"torchrun ran past {budget_s} s and was killed:\n{out[-3000:]}"
    return proc.returncode, out


def _torchrun(args: list[str], log: Path) -> str:
    """train.py on 2 processes; its output, asserting it succeeded."""
    rc, out = _launch([str(ROOT / "train.py"), "--config", str(CONFIG), *args], log, LAUNCH_BUDGET_S)
    assert rc == 0, out[-3000:]
    return out


def _prepared(root: Path) -> Path:
    """16 training answers of 1 to 7 words: micro-batches hold different numbers of answer tokens."""
    rows = {"train": [_row(i, "train") for i in range(16)], "val": [_row(100 + i, "val") for i in range(3)]}
    for i, r in enumerate(rows["train"]):
        r["answer"] = r["answers"][0] = " ".join([r["answer"]] * (1 + 3 * (i % 3)))
    save_prepared(rows, root, {"synthetic": True}, DIM, DIM)
    return root


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[Path, Path]:
    """(tiny LLM folder, prepared set)."""
    root = tmp_path_factory.mktemp("ddp")
    llm, tok = make_tiny("qwen3", seed=0, hidden=32)
    llm.save_pretrained(root / "llm")
    tok.save_pretrained(root / "llm")
    return root / "llm", _prepared(root / "prep")


def test_ddp_matches_single_process_and_resumes(tiny, tmp_path):
    llm_dir, prep = tiny

    # 2 processes x micro-batch 2 x accumulation 2 == 1 process x micro-batch 4 x accumulation 2
    _torchrun(_overrides(llm_dir, prep, tmp_path / "ddp", 2) + ["stop_after_steps=3"], tmp_path / "launch1.log")
    assert json.loads((tmp_path / "ddp" / "last" / "trainer_state.json").read_text())["step"] == 2
    out = _torchrun(_overrides(llm_dir, prep, tmp_path / "ddp", 2), tmp_path / "launch2.log")
    assert "resumed from" in out and "step 2" in out

    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        single = train(load_config(TrainConfig, CONFIG,
                                   _overrides(llm_dir, prep, tmp_path / "one", 4)))
    finally:
        torch.set_num_threads(threads)
    assert single["steps"] == 4
    report = json.loads((tmp_path / "ddp" / "report.json").read_text())
    assert report["steps"] == 4 and report["resumed_from"] == [2]
    # the training loss of every step (sum over all answer tokens of both ranks / their number) agrees
    ta = [h["train_loss"] for h in report["history"] if "train_loss" in h]
    tb = [h["train_loss"] for h in single["history"] if "train_loss" in h]
    assert len(ta) == 4 and ta == pytest.approx(tb, rel=1e-4)
    a = load_file(str(tmp_path / "ddp" / "last" / "trainable.safetensors"))
    b = load_file(str(tmp_path / "one" / "last" / "trainable.safetensors"))
    assert a.keys() == b.keys()
    for n in a:
        assert torch.allclose(a[n], b[n], atol=1e-5, rtol=1e-4), n
    # validation loss is reduced over both ranks: equal to the single-process value
    va = [h["val_loss"] for h in report["history"] if "val_loss" in h]
    vb = [h["val_loss"] for h in single["history"] if "val_loss" in h]
    assert va == pytest.approx(vb, rel=1e-4)


def test_a_stuck_rank_fails_the_run_after_ddp_timeout_s(tiny, tmp_path):
    """Rank 1 stops taking part after the trainer's set-up; rank 0's next collective raises after
    ``ddp_timeout_s`` instead of waiting forever (the default would be 30 min: past the launch budget)."""
    llm_dir, prep = tiny
    rc, out = _launch([__file__, "stall", str(llm_dir), str(prep), str(tmp_path / "out")], tmp_path / "stall.log",
                      budget_s=STALL_TIMEOUT_S + 120)
    assert rc != 0 and "collective failed after" in out, out[-3000:]
    waited = float(out.split("collective failed after ")[1].split(" s")[0])
    assert STALL_TIMEOUT_S * 0.8 <= waited < STALL_TIMEOUT_S + 60, out[-3000:]


def _stall_worker(llm_dir: str, prep: str, out: str) -> int:
    """Run by torchrun (`python test_train_ddp.py stall ...`): the trainer's set-up on both ranks, then
    rank 1 sleeps while rank 0 enters an all-reduce."""
    import time

    from qgmem.training.trainer import setup

    run = setup(load_config(TrainConfig, CONFIG, _overrides(Path(llm_dir), Path(prep), Path(out), 2)
                            + [f"ddp_timeout_s={STALL_TIMEOUT_S}"]))
    acc = run.accelerator
    acc.wait_for_everyone()
    if acc.process_index == 1:
        time.sleep(10 * STALL_TIMEOUT_S)  # stuck: torchrun ends it once rank 0 has failed
        return 0
    t0 = time.monotonic()
    try:
        acc.reduce(torch.ones(1), reduction="sum")
    except Exception as e:  # what a stuck peer makes the backend raise (gloo: a timeout RuntimeError)
        print(f"collective failed after {time.monotonic() - t0:.1f} s: {type(e).__name__}: {e}", flush=True)
        return 3
    print("collective returned", flush=True)
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["stall"]:
    code = _stall_worker(*sys.argv[2:5])
    sys.stdout.flush()
    os._exit(code)  # as train.py does under DDP: no interpreter teardown, where gloo can deadlock
