"""The log file (core/logfile.py): rotating, in the folder given, never holding a secret, and
named by every message about an unexpected storage error."""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

import pytest

from nocturne_desktop.core import logfile
from nocturne_desktop.core.errors import StoreError
from nocturne_desktop.core.store import Store, sqlerrors
from nocturne_desktop.core.types import FactDraft

SECRET = "sk-live-0123456789abcdefSECRET"


def read_all(folder: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in sorted(folder.glob("nocturne.log*")))


def test_install_creates_the_file_and_nocturne_loggers_write_to_it(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "log"
    path = logfile.install(folder)
    assert path == folder / "nocturne.log" and path.exists()
    assert logfile.log_path() == path
    assert logfile.details() == f"Details are in {path}."
    logging.getLogger("nocturne.store").info("opened %s", "n.db")
    logging.getLogger("some.library").info("chatter")  # other libraries: warnings and up only
    logging.getLogger("some.library").warning("a warning")
    text = read_all(folder)
    assert "INFO nocturne.store" in text and "opened n.db" in text
    assert "chatter" not in text and "a warning" in text
    assert logfile.install(folder) == path  # again: the same handler, not a second one
    logging.getLogger("nocturne").error("once")
    assert read_all(folder).count("once") == 1


def test_the_file_rotates_and_keeps_three_old_ones(tmp_path: Path) -> None:
    logfile.install(tmp_path, max_bytes=2_000)
    log = logging.getLogger("nocturne.test")
    for i in range(400):
        log.warning("line %04d %s", i, "x" * 40)
    names = sorted(p.name for p in tmp_path.glob("nocturne.log*"))
    assert names == ["nocturne.log", "nocturne.log.1", "nocturne.log.2", "nocturne.log.3"]
    assert all(p.stat().st_size <= 2_000 for p in tmp_path.glob("nocturne.log*"))
    assert "line 0399" in (tmp_path / "nocturne.log").read_text(encoding="utf-8")


def test_a_registered_secret_never_reaches_the_file(tmp_path: Path) -> None:
    logfile.install(tmp_path, secrets=[SECRET])
    log = logging.getLogger("nocturne.test")
    log.warning("the key is %s", SECRET)
    log.warning(f"inline {SECRET} and again {SECRET}")
    try:
        raise RuntimeError(f"Authorization: Bearer {SECRET}")
    except RuntimeError:
        log.exception("a request failed")
    text = read_all(tmp_path)
    assert SECRET not in text
    assert text.count(logfile.REDACTED) == 4 and "Bearer [redacted]" in text
    assert "Traceback (most recent call last)" in text


def test_an_uncaught_exception_in_a_thread_is_logged_with_its_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda a: shown.append(str(a.exc_value)))
    logfile.install(tmp_path)
    t = threading.Thread(target=lambda: 1 / 0, name="worker-x")
    t.start()
    t.join()
    logfile.uninstall()
    assert shown == ["division by zero"]  # the hook before still reports it
    text = read_all(tmp_path)
    assert "uncaught ZeroDivisionError in thread worker-x" in text and "1 / 0" in text


def test_an_unexpected_store_error_names_the_log_and_logs_the_traceback(tmp_path: Path) -> None:
    folder = tmp_path / "log"
    path = logfile.install(folder)
    with Store(tmp_path / "n.db") as store:
        store.append("scratch", FactDraft("The user keeps bees."))
        with store.transaction():
            store._conn.execute("DROP TABLE meta")  # a store this code does not expect: a bug
        with pytest.raises(StoreError) as info:
            store.get_meta("x")
    message = str(info.value)
    assert "unexpected" in message and message.endswith(f"Details are in {path}.")
    text = read_all(folder)
    assert "unexpected SQLite error" in text and "no such table: meta" in text
    assert "Traceback (most recent call last)" in text


def test_known_storage_errors_do_not_point_at_the_log(tmp_path: Path) -> None:
    logfile.install(tmp_path / "log")
    exc = sqlite3.OperationalError("database or disk is full")
    exc.sqlite_errorcode = 13  # type: ignore[attr-defined]
    assert "Details are in" not in str(sqlerrors.classify(exc, tmp_path / "n.db", 5))


def test_without_a_log_file_the_message_is_as_before(tmp_path: Path) -> None:
    logfile.uninstall()
    exc = sqlite3.OperationalError("near \"SELEC\": syntax error")
    exc.sqlite_errorcode = 1  # type: ignore[attr-defined]
    message = str(sqlerrors.classify(exc, tmp_path / "n.db", 5))
    assert message.endswith("please report it)") and "Details" not in message


def test_a_folder_that_cannot_take_the_log_leaves_logging_as_it_was(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert logfile.install(blocker / "log") is None
    assert logfile.log_path() is None and logfile.details() == ""
