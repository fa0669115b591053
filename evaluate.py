#!/usr/bin/env python
"""Evaluate memory methods on a benchmark: `python evaluate.py --config configs/eval/locomo_cpu.yaml`."""

import sys

from qgmem.evaluation.cli import main

if __name__ == "__main__":
    sys.exit(main())
