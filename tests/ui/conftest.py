"""UI test harness: every folder in tmp, no leaked QThread, a window wired to the fake server."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings, QTimer

from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import Fact, FactDraft
from nocturne_desktop.settings import ApiKey, Settings, SettingsFiles
from nocturne_desktop.ui import jobs
from tests.fakeserver import FakeLLM

DAY = 86400.0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The offscreen platform warns that it cannot propagate size hints whenever a top-level
    # window is shown, or raise one brought to the front; that says nothing about our code.
    for item in items:
        if "tests/ui" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.qt_log_ignore("propagateSizeHints",
                                                      "does not support raise"))


@pytest.fixture(scope="session", autouse=True)
def window_matrix(request: pytest.FixtureRequest) -> Iterator[None]:
    """The window's rows of the hostile-input matrix, printed at the end of the run."""
    yield
    from tests.core import matrixprint
    from tests.ui import hostilerows

    matrixprint.print_matrix(request, hostilerows.TITLE, hostilerows.ROWS, 52, notes=True,
                             columns=hostilerows.COLUMNS)


@pytest.fixture(autouse=True)
def tmp_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Data, config, cache and QSettings all under tmp for every UI test."""
    folders = {name: tmp_path / name for name in ("data", "config", "cache", "qsettings")}
    for p in folders.values():
        p.mkdir()
    monkeypatch.setenv("NOCTURNE_DATA_DIR", str(folders["data"]))
    monkeypatch.setenv("NOCTURNE_CONFIG_DIR", str(folders["config"]))
    monkeypatch.setenv("NOCTURNE_CACHE_DIR", str(folders["cache"]))
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folders["qsettings"]))
    return folders


@pytest.fixture(autouse=True)
def no_leaked_threads(qapp: Any) -> Iterator[None]:
    """Fail a test that leaves a worker thread running (it would crash at interpreter exit)."""
    yield
    # A job's last callback reaches the GUI thread a moment before its thread returns from
    # run(): a thread that ends within a short grace is finishing, not leaked.
    for t in jobs.running_threads():
        t.wait(2_000)
    leaked = jobs.running_threads()
    if leaked:
        names = [t.objectName() for t in leaked]
        for t in leaked:
            t.wait(10_000)  # let it end so the NEXT test is not blamed too
        pytest.fail(f"test leaked running QThread(s): {', '.join(names)}")


@pytest.fixture
def timers(qapp: Any) -> Iterator[Callable[[int, Callable[[], object]], None]]:
    """``timers(ms, fn)``: a single-shot timer that is stopped when the test ends. A test that
    runs the app's own loop (``cli.main``) sets a safety-net ``quit``; left pending, it would
    fire inside the NEXT test's loop, end it early and leave that test's window open."""
    made: list[QTimer] = []

    def start(ms: int, fn: Callable[[], object]) -> None:
        t = QTimer()
        t.setSingleShot(True)
        t.timeout.connect(fn)
        t.start(ms)
        made.append(t)

    yield start
    for t in made:
        t.stop()


@pytest.fixture
def db_path(tmp_folders: dict[str, Path]) -> Path:
    return tmp_folders["data"] / "nocturne.db"


SEED: list[tuple[str, str, str, float]] = [
    # block, category, text, age in days
    ("persona", "identity", "The assistant is called Nocturne and keeps a memory it can show.", 40),
    ("human", "identity", "The user lives in Lisbon and works best in the morning.", 3),
    ("scratch", "identity", "User lives in Lisbon and works best in the morning.", 1),
    ("scratch", "preferences", "The user keeps a bearded dragon called Saffron.", 1),
    ("scratch", "context", "The user's stack is Airflow and Postgres.", 1),
    ("scratch", "commitments", "The user promised to review the Airflow migration on Friday.", 1),
    ("episodes", "event", "The user went to a conference in Porto.", 70),
    ("episodes", "event", "The user fixed the garden fence.", 65),
    ("scratch", "context", "The user had toast for breakfast.", 45),
]


def seed_store(path: Path, rows: list[tuple[str, str, str, float]] = SEED) -> list[Fact]:
    now = time.time()
    with Store(path) as store:
        for _block, _cat, text, _age in rows:
            store.add_turn("user", text)
        return [store.append(block, FactDraft(text, cat, i + 1, now - age * DAY))
                for i, (block, cat, text, age) in enumerate(rows)]


def snapshot_of(facts: list[Fact]) -> list[tuple[str, str, str, str, bool]]:
    """What "the same state" means: every fact's id, block, text, category and active flag."""
    return sorted((f.id, f.block, f.text, f.category, f.active) for f in facts)


@pytest.fixture
def make_window(qtbot: Any, db_path: Path, tmp_folders: dict[str, Path],
                monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Any]]:
    """Build a window over ``db_path``; closed (and its threads joined) after the test."""
    from nocturne_desktop.ui.mainwindow import MainWindow
    from nocturne_desktop.ui.session import Session

    made: list[Any] = []

    def make(settings: Settings | None = None, *, model_factory: Any = None, show: bool = True,
             key: ApiKey | None = None) -> Any:
        session = Session(db_path, settings or Settings(), key or ApiKey(),
                          files=SettingsFiles(tmp_folders["config"]), model_factory=model_factory)
        win = MainWindow(session)
        qtbot.addWidget(win)
        monkeypatch.setattr(win, "confirm_close_during_sleep", lambda: True)
        if show:
            win.show()
        made.append(win)
        return win

    yield make
    for win in made:
        win.close()  # cancels and joins every job; idempotent
        win.session.wait_threads()


@pytest.fixture
def server_settings(fake_llm: FakeLLM) -> Settings:
    return Settings(base_url=fake_llm.base_url, model="fake-model")


def sleep_from_the_menu(qtbot: Any, win: Any) -> None:
    """Memory → Sleep, as a person starts it; back when the sleep's job has ended."""
    with qtbot.waitSignal(win.session.busyChanged, timeout=30_000,
                          check_params_cb=lambda kind: kind == ""):
        win.menus.sleep.trigger()
    win.session.wait_threads()
