#!/usr/bin/env python
"""Graph-token training entry point (see qgmem/training/trainer.py):

    accelerate launch --config_file configs/accelerate/cpu.yaml train.py --config configs/train/smollm2_cpu.yaml [key=value ...]
"""

import sys

from qgmem.training.trainer import main

if __name__ == "__main__":
    sys.exit(main())
