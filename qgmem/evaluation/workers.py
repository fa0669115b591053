"""`workers: N` in a retrieval config: score the conversations in N processes on one machine.

Each worker is the shard run ``<run>.shard-I-of-N`` (with its own store, ``<store_dir>.shard-I-of-N``),
what a cluster array job runs, with shards by position (``shard_by: position``: the selection's i-th
conversation goes to worker i mod N, so the workers finish together), started here as a process
with ``cores // N`` threads (embedding and parsing use one thread each on two cores, instead of
two processes fighting over a shared pool). When every worker has finished, the parent run's
rows, summary and report are the merge of the shard runs (`qgmem.evaluation.merge_runs`), so a
workers run reads as a one-process run would, latencies aside. A killed run resumes: the same
command (same ``run_name``, or ``--resume``) resumes each shard run where it stopped.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qgmem.config import to_dict
from qgmem.errors import UserError
from qgmem.evaluation.config import RetrievalBenchConfig
from qgmem.sharding import Shard, sharded_name


class WorkerFailed(RuntimeError, UserError):
    """A worker process stopped with an error; its shard run folder holds the error."""


def threads_per_worker(workers: int) -> int:
    return max(1, (os.cpu_count() or 1) // workers)


def limit_threads(threads: int) -> None:
    """Called first in a worker process: thread limits set before torch or BLAS start their pools."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    import torch

    torch.set_num_threads(threads)


def run_workers(cfg: RetrievalBenchConfig, run_dir: Path, target: Callable[[dict[str, Any], int], None]) -> list[Path]:
    """Run shards 0..N-1 of `cfg` side by side (N = cfg.workers), each as `target(shard config, threads)`
    in a fresh process; returns their run folders, in order."""
    n = cfg.workers
    threads = threads_per_worker(n)
    ctx = mp.get_context("spawn")  # no forked copies of loaded models, locks or thread pools
    procs, dirs = [], []
    for i in range(n):
        shard = Shard(i, n)
        sub = {**to_dict(cfg), "shard": str(shard), "shard_by": "position", "run_name": cfg.run_name}
        dirs.append(run_dir.parent / sharded_name(str(cfg.run_name), shard))
        p = ctx.Process(target=target, args=(sub, threads), name=f"qgmem-shard-{i}-of-{n}")
        p.start()
        procs.append(p)
    try:
        for p in procs:
            p.join()
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
    failed = [(d, p.exitcode) for d, p in zip(dirs, procs) if p.exitcode != 0]
    if failed:
        where = "; ".join(f"{d} (exit code {code})" for d, code in failed)
        raise WorkerFailed(f"{len(failed)} of {n} workers failed: {where}; the error is in each folder's meta.json; "
                           "run the same command again to resume")
    return dirs
