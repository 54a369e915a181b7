"""Where Nocturne keeps its files.

Data (the SQLite store) lives in the platform's user-data folder, settings in the user-config
folder, caches (the built-in engine) in the user-cache folder, the log file in the user-log
folder. ``--data-dir`` or the ``NOCTURNE_DATA_DIR`` environment variable overrides the data
folder (tests, portable use); ``NOCTURNE_CONFIG_DIR``, ``NOCTURNE_CACHE_DIR`` and
``NOCTURNE_LOG_DIR`` do the same for settings, caches and the log.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "Nocturne"
DB_FILENAME = "nocturne.db"


def data_dir(override: str | os.PathLike[str] | None = None) -> Path:
    if override:
        return Path(override).expanduser()
    env = os.environ.get("NOCTURNE_DATA_DIR")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def config_dir() -> Path:
    env = os.environ.get("NOCTURNE_CONFIG_DIR")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def cache_dir() -> Path:
    env = os.environ.get("NOCTURNE_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


def log_dir() -> Path:
    """Where ``nocturne.log`` is written (``core.logfile``): the platform's user-log folder
    (``$XDG_STATE_HOME/Nocturne/log`` on Linux, ``~/Library/Logs/Nocturne`` on macOS,
    ``%LOCALAPPDATA%\\Nocturne\\Logs`` on Windows)."""
    env = os.environ.get("NOCTURNE_LOG_DIR")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_log_dir(APP_NAME, appauthor=False))


def db_path(data_override: str | os.PathLike[str] | None = None) -> Path:
    return data_dir(data_override) / DB_FILENAME
