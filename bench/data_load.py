"""Benchmark data loading: our loaders vs the plain `json.load` way, timed in the same run.

Each variant runs in its own process so its peak memory (ru_maxrss) is its own. Times are CPU seconds
(user + sys) of that process, not wall time, because the machine is shared and wall time is noisy.

    python bench/data_load.py [--data-dir /work/shared/data] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

VARIANTS = {
    # LoCoMo: full loader (validation, evidence matching, dataclasses) vs bare json.load of the file
    "locomo/json.load": "import json; d=json.load(open(f'{root}/locomo/locomo10.json')); n=len(d)",
    "locomo/load_locomo": "from qgmem.data import load_locomo; n=len(load_locomo(f'{root}/locomo/locomo10.json'))",
    # LongMemEval-S: json.load of the whole xz then conversion (raw list and dataclasses coexist)
    "lme-s/json.load+convert": (
        "import json, lzma; from qgmem.data.longmemeval import _instance; from pathlib import Path; "
        "p=f'{root}/longmemeval/longmemeval_s_cleaned.498.json.xz'; raw=json.load(lzma.open(p,'rt',encoding='utf-8')); "
        "convs=[_instance(Path(p), i, x) for i, x in enumerate(raw)]; n=len(convs)"),
    "lme-s/load_longmemeval(stream)": (
        "from qgmem.data import load_longmemeval; "
        "n=len(load_longmemeval('s', f'{root}/longmemeval/longmemeval_s_cleaned.498.json.xz'))"),
}

CHILD = """
import resource, sys, time
import json, lzma, qgmem.data, qgmem.data.longmemeval  # imports outside the timed part, same for all
root = sys.argv[1]
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
c = cpu()
{code}
dt = cpu() - c
print(dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, n)
"""


def run(code: str, root: str) -> tuple[float, float, int]:
    out = subprocess.run([sys.executable, "-c", CHILD.format(code=code), root], check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1]), int(out[2])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=os.environ.get("QGMEM_DATA_DIR", "data"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    res: dict[str, tuple[float, float, int]] = {}
    for name, code in VARIANTS.items():
        runs = [run(code, args.data_dir) for _ in range(args.repeat)]
        best = min(runs, key=lambda r: r[0])
        res[name] = (best[0], max(r[1] for r in runs), best[2])
        print(f"{name:<34} {best[0]:7.3f} CPU s (best of {args.repeat})  "
              f"peak RSS {res[name][1]:7.0f} MB  items {best[2]}")
    lt, lm = res["lme-s/load_longmemeval(stream)"][:2]
    bt, bm = res["lme-s/json.load+convert"][:2]
    print(f"LongMemEval-S streaming / json.load baseline: time x{lt / bt:.2f}, peak memory x{lm / bm:.2f}")
    print(f"LoCoMo full loader / bare json.load: time x{res['locomo/load_locomo'][0] / res['locomo/json.load'][0]:.2f}")
    print(json.dumps({k: {"seconds": v[0], "peak_rss_mb": v[1]} for k, v in res.items()}))


if __name__ == "__main__":
    main()
