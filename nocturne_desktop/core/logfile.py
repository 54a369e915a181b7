"""The log file: where a bug's traceback goes, never the API key.

The package logs through :mod:`logging` (``nocturne.store``, ``nocturne.ui``, ...). The window
and the command line call :func:`install` at start-up with the user's log folder
(``paths.log_dir()``): a :class:`~logging.handlers.RotatingFileHandler` on the root logger,
``nocturne.log`` plus :data:`BACKUPS` older files of at most :data:`MAX_BYTES` each, so the
folder never holds more than a few megabytes however long Nocturne runs. The ``nocturne``
loggers write from INFO up; other libraries' records reach the file from WARNING up (the root
level is left alone).

Every record is passed through :class:`Redact` before any handler writes it: each secret
registered with :func:`add_secret` (the API key: ``settings.ApiKey`` and the model client
register theirs when they are made) is replaced by ``[redacted]`` in the message, its arguments
and the formatted traceback. A message for a person that says something went wrong
unexpectedly ends with :func:`details`, the sentence naming the log file.

Nothing here may stop Nocturne from starting: a log folder that cannot be written (read-only,
full) leaves logging as it was and :func:`install` returns None.
"""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from nocturne_desktop.core import files

__all__ = [
    "BACKUPS",
    "LOG_FILENAME",
    "MAX_BYTES",
    "REDACTED",
    "Redact",
    "add_secret",
    "details",
    "forward",
    "install",
    "log_path",
    "redact",
    "redact_url",
    "uninstall",
]

LOG_FILENAME = "nocturne.log"
MAX_BYTES = 1_000_000
"""A log file is rotated when it would grow past this (bytes)."""
BACKUPS = 3
"""Rotated files kept beside the current one (``nocturne.log.1`` is the most recent)."""
REDACTED = "[redacted]"
FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"

_lock = threading.Lock()
_secrets: frozenset[str] = frozenset()
_handler: logging.handlers.RotatingFileHandler | None = None
_saved_level: int | None = None
_ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], Any]
_ThreadHook = Callable[[threading.ExceptHookArgs], Any]
_saved_hooks: tuple[_ExceptHook, _ThreadHook] | None = None
_forwarded_to: Path | None = None


def add_secret(value: str | None) -> None:
    """Never let ``value`` reach a log record (an empty value is ignored)."""
    global _secrets
    if not value or not value.strip():
        return
    with _lock:
        _secrets = _secrets | {value, value.strip()}


_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,31}://)[^/\s@]{1,512}@")


def redact_url(text: str) -> str:
    """``text`` with the user name and password of every URL in it hidden
    (``http://me:pw@host`` → ``http://***@host``)."""
    return _URL_CREDENTIALS.sub(r"\1***@", text) if "@" in text else text


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by :data:`REDACTED` (longest first, so a
    secret that contains another is removed whole) and every URL's credentials hidden."""
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return redact_url(text)


class Redact(logging.Filter):
    """Rewrites a record so that no registered secret is in what any handler writes: the
    message is rendered with its arguments, the traceback formatted once, both redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: logging reports it; keep the raw parts
            message = f"{record.msg!r} % {record.args!r}"
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


_REDACT = Redact()


class _PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating log whose every file is 0600 (the log names facts, turns and errors)."""

    def _open(self):  # type: ignore[no-untyped-def]
        stream = super()._open()
        with contextlib.suppress(OSError):
            os.fchmod(stream.fileno(), files.PRIVATE_FILE)
        return stream


def install(folder: Path, *, max_bytes: int = MAX_BYTES, backups: int = BACKUPS,
            secrets: Iterable[str | None] = (), hook_uncaught: bool = True) -> Path | None:
    """Log to ``folder``/``nocturne.log`` (rotating); returns its path, or None when the folder
    cannot take it (logging is then left as it was). Calling it again with the same folder keeps
    the file; with another folder, moves the log there. ``hook_uncaught`` also logs an exception
    nothing caught (in any thread) with its traceback, then lets the previous hook report it."""
    global _handler, _saved_level
    for s in secrets:
        add_secret(s)
    path = Path(folder) / LOG_FILENAME
    with _lock:
        if _handler is not None and Path(_handler.baseFilename) == path.absolute():
            return path
    try:
        files.ensure_private_dir(path.parent)
        handler = _PrivateRotatingFileHandler(
            path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
    except OSError:
        return None
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(_REDACT)
    uninstall()
    with _lock:
        _handler = handler
        ours = logging.getLogger("nocturne")
        _saved_level = ours.level
        if ours.getEffectiveLevel() > logging.INFO:
            ours.setLevel(logging.INFO)
        logging.getLogger().addHandler(handler)
    _guard_other_handlers()
    if hook_uncaught:
        _hook_uncaught()
    return path


def forward(handler: logging.Handler, path: Path | None) -> None:
    """Log through ``handler`` instead of a file of this process's own: a worker process sends
    its records to the window's process, which writes them to its file ``path`` (one writer:
    two processes rotating one file would lose records). As with :func:`install`, the
    ``nocturne`` loggers pass INFO up, every secret is redacted before ``handler`` sees a
    record, and :func:`details` names ``path``."""
    global _forwarded_to
    handler.setLevel(logging.INFO)
    handler.addFilter(_REDACT)
    with _lock:
        _forwarded_to = Path(path) if path is not None else None
        ours = logging.getLogger("nocturne")
        if ours.getEffectiveLevel() > logging.INFO:
            ours.setLevel(logging.INFO)
        logging.getLogger().addHandler(handler)


def _guard_other_handlers() -> None:
    """The redaction filter on every root handler too (a console one set up before), so a
    secret is kept out of stderr as well as the file."""
    for h in logging.getLogger().handlers:
        if _REDACT not in h.filters:
            h.addFilter(_REDACT)


def uninstall() -> None:
    """Stop logging to the file (and restore what :func:`install` changed)."""
    global _handler, _saved_level, _saved_hooks
    with _lock:
        handler, _handler = _handler, None
        level, _saved_level = _saved_level, None
        hooks, _saved_hooks = _saved_hooks, None
    if handler is not None:
        logging.getLogger().removeHandler(handler)
        handler.close()
    if level is not None:
        logging.getLogger("nocturne").setLevel(level)
    if hooks is not None:
        sys.excepthook, threading.excepthook = hooks


def log_path() -> Path | None:
    """The file :func:`install` logs to (None before, or when it could not), or the one a
    worker process's records are sent to (:func:`forward`)."""
    handler = _handler
    return _forwarded_to if handler is None else Path(handler.baseFilename)


def details() -> str:
    """The sentence a message about an unexpected error ends with: where its details are."""
    path = log_path()
    return f"Details are in {path}." if path is not None else ""


def _hook_uncaught() -> None:
    global _saved_hooks
    if _saved_hooks is not None:
        return
    previous, previous_thread = sys.excepthook, threading.excepthook
    log = logging.getLogger("nocturne")

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if not issubclass(kind, KeyboardInterrupt):
            log.critical("uncaught %s", kind.__name__, exc_info=(kind, exc, tb))
        previous(kind, exc, tb)

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is not SystemExit and args.exc_value is not None:
            name = args.thread.name if args.thread is not None else "?"
            log.critical("uncaught %s in thread %s", args.exc_type.__name__, name,
                         exc_info=(args.exc_type, args.exc_value, args.exc_traceback))
        previous_thread(args)

    _saved_hooks = (previous, previous_thread)
    sys.excepthook, threading.excepthook = hook, thread_hook
