"""Two-process DDP (gloo on CPU, via torchrun): same trainable weights as one process with the same
global batch, and a kill + resume under DDP. Slow (starts two Python processes twice)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import REDUCED
from safetensors.torch import load_file
from test_train_loop import DIM, _row
from qgmem.testing.tiny_models import make_tiny

from qgmem.config import load_config
from qgmem.training.prepared import save_prepared
from qgmem.training.config import TrainConfig
from qgmem.training.trainer import train

pytestmark = [
    pytest.mark.slow,
    # Hung once past pytest's 600 s limit in a CI-style run (two torchrun launches on 2 shared cores);
    # until that is understood, the reduced CI run leaves it out; `pytest -m slow tests/test_train_ddp.py`
    # without QGMEM_REDUCED still runs it.
    pytest.mark.skipif(REDUCED, reason="reduced run: the 2-process DDP test is run in the full slow suite only"),
]
ROOT = Path(__file__).resolve().parents[1]


def _overrides(llm_dir: Path, prep: Path, out: Path, batch: int) -> list[str]:
    return [f"output_dir={out}", f"model.name={llm_dir}", f"data.dir={prep}",
            "data.max_length=160", "encoder.hidden=32", "encoder.heads=2", "encoder.projector_hidden=64",
            "encoder.dropout=0.0", f"optim.batch_size={batch}", "optim.grad_accum=2", "optim.max_steps=4",
            "optim.lr=3e-3", "eval.every=2", "save_every=2", "progress=false", "eval.test=false"]


def _torchrun(args: list[str], port: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(port),
           str(ROOT / "train.py"), "--config", str(ROOT / "configs/train/smollm2_cpu.yaml"), *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_ddp_matches_single_process_and_resumes(tmp_path):
    llm, tok = make_tiny("qwen3", seed=0, hidden=32)
    llm_dir = tmp_path / "llm"
    llm.save_pretrained(llm_dir)
    tok.save_pretrained(llm_dir)
    prep = tmp_path / "prep"
    save_prepared({"train": [_row(i, "train") for i in range(16)], "val": [_row(100 + i, "val") for i in range(3)]},
                  prep, {"synthetic": True}, DIM, DIM)

    # 2 processes x micro-batch 2 x accumulation 2 == 1 process x micro-batch 4 x accumulation 2
    r = _torchrun(_overrides(llm_dir, prep, tmp_path / "ddp", 2) + ["stop_after_steps=3"], 29531)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads((tmp_path / "ddp" / "last" / "trainer_state.json").read_text())["step"] == 2
    r = _torchrun(_overrides(llm_dir, prep, tmp_path / "ddp", 2), 29532)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "resumed from" in r.stdout and "step 2" in r.stdout

    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        single = train(load_config(TrainConfig, ROOT / "configs/train/smollm2_cpu.yaml",
                                   _overrides(llm_dir, prep, tmp_path / "one", 4)))
    finally:
        torch.set_num_threads(threads)
    assert single["steps"] == 4
    report = json.loads((tmp_path / "ddp" / "report.json").read_text())
    assert report["steps"] == 4 and report["resumed_from"] == [2]
    a = load_file(str(tmp_path / "ddp" / "last" / "trainable.safetensors"))
    b = load_file(str(tmp_path / "one" / "last" / "trainable.safetensors"))
    assert a.keys() == b.keys()
    for n in a:
        assert torch.allclose(a[n], b[n], atol=1e-5, rtol=1e-4), n
    # validation loss is reduced over both ranks: equal to the single-process value
    va = [h["val_loss"] for h in report["history"] if "val_loss" in h]
    vb = [h["val_loss"] for h in single["history"] if "val_loss" in h]
    assert va == pytest.approx(vb, rel=1e-4)
