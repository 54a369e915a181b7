"""The model-free heart of Nocturne: no Qt, no HTTP.

Everything here is plain Python over SQLite. The model client is reached only through the
Protocol in :mod:`nocturne_desktop.core.ports`, so the core can be tested without a display
and without a network.
"""
