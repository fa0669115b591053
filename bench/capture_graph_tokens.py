#!/usr/bin/env python
"""Run a Python entry point as its own command would and keep every graph-token set its graph encoders made.

    python bench/capture_graph_tokens.py --out tokens.pt -- evaluate.py --config configs/eval/rehearsal_checkpoint.yaml ...

The script runs unchanged (``runpy`` as ``__main__``, its own argv); a global forward hook records the output of
every `GraphTokenEncoder` call, in call order, and ``--out`` gets the list (``torch.save``) when the script ends,
with its exit code. bench/rehearsal.py uses it to compare the tokens `evaluate.py` really answered with against
training's validation and `MemoryPipeline.answer`: one encoder call per answer, in the order of the run's
predictions.jsonl.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    import torch

    from qgmem.model.encoder import GraphTokenEncoder

    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        print("usage: capture_graph_tokens.py --out FILE -- SCRIPT [ARGS ...]", file=sys.stderr)
        return 2
    cut = argv.index("--")
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="file for the list of captured token tensors (torch.save)")
    a = p.parse_args(argv[:cut])
    script, *script_args = argv[cut + 1:]
    caught: list[torch.Tensor] = []

    def hook(module, args, output):  # noqa: ANN001 - torch's hook signature
        if isinstance(module, GraphTokenEncoder):
            caught.append(output.detach().to("cpu", torch.float32).clone())

    handle = torch.nn.modules.module.register_module_forward_hook(hook)
    sys.argv = [script, *script_args]
    code: int = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        handle.remove()
        torch.save({"tokens": caught, "exit_code": code, "argv": [script, *script_args]}, a.out)
    return code


if __name__ == "__main__":
    sys.exit(main())
