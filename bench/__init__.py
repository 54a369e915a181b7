"""Benchmarks: plain scripts that print figures (``python -m bench.<name>``)."""

import nocturne_desktop  # noqa: F401  (first: numpy's OpenBLAS on one thread, as in the app)
