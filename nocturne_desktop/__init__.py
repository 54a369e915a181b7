"""Nocturne Desktop: a chat agent whose long-term memory you can see, audit and undo."""

__version__ = "0.1.0"
