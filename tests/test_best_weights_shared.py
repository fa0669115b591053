"""Every process of a run scores the same best/ weights, or the run refuses: with a node-local
``output_dir`` on a multi-node run only the main process's node has the best/ it wrote, and the other
ranks would score other weights (or their initial ones: `load_best_weights` used to return False
silently). Two gloo processes via torchrun stand in for two nodes, each with its own output_dir."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

from qgmem.errors import UserError
from qgmem.training.checkpoint import NotShared, check_same_best, content_hash

ROOT = Path(__file__).resolve().parents[1]


def test_check_same_best_names_the_folder_and_the_first_odd_process(tmp_path) -> None:
    check_same_best(["ab12", "ab12", "ab12"], tmp_path)  # one best/, seen by all
    check_same_best(["missing", "missing"], tmp_path)  # none anywhere: nothing to load, nobody differs
    with pytest.raises(NotShared) as e:
        check_same_best(["ab12" * 16, "ab12" * 16, "missing"], tmp_path)
    msg = str(e.value)
    assert isinstance(e.value, UserError) and "\n" not in msg
    assert f"output_dir {tmp_path}: process 2 sees no best/ checkpoint" in msg and "1 of 3 processes" in msg
    assert "storage that every node shares" in msg
    with pytest.raises(NotShared, match="process 1 sees a best/ with sha256 cd34"):
        check_same_best(["ab12" * 16, "cd34" * 16], tmp_path)


def test_content_hash_follows_the_bytes(tmp_path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"x" * 3_000_000)
    b.write_bytes(b"x" * 3_000_000)
    assert content_hash(a) == content_hash(b) != content_hash(tmp_path / "none") == "missing"
    b.write_bytes(b"x" * 2_999_999 + b"y")
    assert content_hash(a) != content_hash(b)


def _best(out: Path, value: float) -> None:
    """A complete best/ checkpoint of the worker's model whose weights are all `value`."""
    from safetensors.torch import save_file

    from qgmem.training.checkpoint import COMPLETE

    (out / "best").mkdir(parents=True, exist_ok=True)
    save_file({"weight": torch.full((2, 2), value), "bias": torch.full((2,), value)}, str(out / "best" / "model.safetensors"))
    (out / "best" / COMPLETE).write_text("")


@pytest.mark.slow
@pytest.mark.timeout(400)
@pytest.mark.parametrize("layout", ["shared", "node-local", "node-local-stale"])
def test_two_processes_load_one_best_or_refuse(tmp_path, layout) -> None:
    from test_train_ddp import _launch

    shared = tmp_path / "shared"
    _best(shared, 1.0)
    if layout == "node-local-stale":
        _best(tmp_path / "rank1", 2.0)  # another run's best/ on the other node
    rc, out = _launch([__file__, "worker", str(tmp_path), layout], tmp_path / "launch.log", budget_s=300)
    if layout == "shared":
        assert rc == 0 and out.count("loaded weights 1.0") == 2, out[-3000:]
    else:
        seen = "no best/ checkpoint" if layout == "node-local" else "a best/ with sha256"
        assert rc != 0 and out.count(f"sees {seen}") == 2 and "loaded" not in out, out[-3000:]


def _worker(root: str, layout: str) -> int:
    """Run by torchrun: each rank loads best/ from its output_dir (rank 1's is its own when node-local)."""
    from accelerate import Accelerator

    from qgmem.training.checkpoint import load_best_weights

    acc = Accelerator(cpu=True)
    out = Path(root) / ("shared" if layout == "shared" or acc.process_index == 0 else f"rank{acc.process_index}")
    model = torch.nn.Linear(2, 2)
    try:
        load_best_weights(model, out, acc)
    except NotShared as e:
        print(f"rank {acc.process_index}: {e}", flush=True)
        return 2
    print(f"rank {acc.process_index}: loaded weights {float(model.weight[0, 0])}", flush=True)
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["worker"]:
    code = _worker(*sys.argv[2:4])
    sys.stdout.flush()
    os._exit(code)  # as train.py does under DDP: no interpreter teardown, where gloo can deadlock
