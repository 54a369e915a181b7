"""Nocturne Desktop: a chat agent whose long-term memory you can see, audit and undo."""

import os

# numpy's OpenBLAS on one thread, set before numpy loads (a value already set is kept): the
# app's BLAS work is one matrix-vector product per ranking, and the spare BLAS threads
# spin-wait after each, taking the cores the GUI and the SQL need (docs/benchmarks.md, recall).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
