"""Benchmarks: plain scripts that print figures (``python -m bench.<name>``)."""
