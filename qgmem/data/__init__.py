"""Benchmark loaders: every benchmark becomes ``list[Conversation]`` with its questions attached.

``load_dataset_by_name("locomo")`` is the usual entry point; `qgmem data stats NAME` prints counts.
"""

from .beam import load_beam
from .convomem import load_convomem, load_convomem_cases
from .errors import DataError
from .factconsolidation import load_factconsolidation
from .locomo import load_locomo
from .longmemeval import iter_longmemeval, load_longmemeval
from .msc import load_msc
from .registry import DATASET_NAMES, load_dataset_by_name
from .stats import DatasetStats, compute_stats

__all__ = ["DataError", "DATASET_NAMES", "DatasetStats", "compute_stats", "load_dataset_by_name", "load_beam",
           "load_convomem", "load_convomem_cases", "load_factconsolidation", "load_locomo", "load_longmemeval", "iter_longmemeval", "load_msc"]
