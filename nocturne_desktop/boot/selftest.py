"""``Nocturne --self-test``: prove a build works, with no display, no model and no user data.

It runs the real application code end to end in a temporary folder (settings, data and cache
are all redirected there) and checks each step:

1. Qt starts (offscreen unless ``QT_QPA_PLATFORM`` says otherwise);
2. the package data is readable through importlib.resources (icon, demo memory);
3. the demo memory is written to a fresh store and is fully traceable;
3b. the embedding model loads from the bundle with the network blocked, every demo fact got
   its meaning vector when it was written, and a question sharing no word with a fact finds it;
4. the main window opens and paints, and its endpoint probe reaches a tiny loopback server
   (so the HTTP stack works in the build too);
5. the first-run dialog detects that server by its port and chooses it;
6. a rules-only sleep runs in the window's worker process (the child a sleep runs in, started
   by multiprocessing from this executable: in a frozen build, through ``freeze_support``)
   and changes the memory;
7. undoing it returns the store to exactly the state before (every fact, active or not);
8. the window closes cleanly, no thread left, and the database passes its integrity check.

A watchdog ends the process if the whole run exceeds its time limit (default 20 s), so a hang
is a failure, never a stuck build. The report is JSON (``report_path``) plus one summary line on
stdout; the exit status is 0 only when every step passed.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

from nocturne_desktop import __version__

TIME_LIMIT_S = 20.0
SELFTEST_MODEL = "selftest-model"


@dataclass
class Step:
    name: str
    ok: bool
    detail: str
    seconds: float


@dataclass
class Report:
    version: str = __version__
    frozen: bool = bool(getattr(sys, "frozen", False))
    python: str = platform.python_version()
    platform: str = platform.platform()
    qt: str = ""
    qpa: str = ""
    window: str = ""
    """``MainWindow`` (the real window) or ``QMainWindow`` (the ui package is absent)."""
    steps: list[Step] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(s.ok for s in self.steps)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ok"] = self.ok
        return d


class StepFailed(Exception):
    """A check inside a step did not hold; the message says which."""


def _say(line: str) -> None:
    # a windowed build on Windows has no stdout at all
    if sys.stdout is not None:
        with contextlib.suppress(OSError, ValueError):
            print(line, flush=True)


class _ModelsHandler(BaseHTTPRequestHandler):
    """Answers ``GET /v1/models`` like any OpenAI-compatible server; nothing else."""

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            body = json.dumps({"object": "list", "data": [{"id": SELFTEST_MODEL, "object": "model"}]})
            status = 200
        else:
            body, status = json.dumps({"error": {"message": "not found"}}), 404
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@contextlib.contextmanager
def _models_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ModelsHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="selftest-models", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def _redirected_folders(root: Path) -> Iterator[dict[str, Path]]:
    """Point every folder Nocturne writes to (data, settings, cache) inside ``root``."""
    folders = {name: root / name for name in ("data", "config", "cache")}
    saved = {}
    for name, path in folders.items():
        path.mkdir(parents=True, exist_ok=True)
        var = f"NOCTURNE_{name.upper()}_DIR"
        saved[var] = os.environ.get(var)
        os.environ[var] = str(path)
    try:
        yield folders
    finally:
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


def _wait(app: Any, done: Callable[[], bool], timeout_s: float) -> bool:
    """Run the event loop until ``done()`` or the timeout (a test harness, not app code)."""
    from PySide6.QtCore import QEventLoop

    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            return False
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
        time.sleep(0.005)
    return True


def _watchdog(limit_s: float, report: Report, report_path: Path | None) -> threading.Timer:
    def fire() -> None:
        report.steps.append(Step("time limit", False, f"the self-test did not finish within "
                                 f"{limit_s:g}s", limit_s))
        _write_report(report, report_path)
        _say(f"Nocturne self-test: FAIL (hung; over {limit_s:g}s)")
        os._exit(3)

    timer = threading.Timer(limit_s, fire)
    timer.daemon = True
    timer.start()
    return timer


def binding_refcount_drift(app: Any, n: int) -> dict[str, int]:
    """How much ``sys.getrefcount`` of None, True and False moved over ``n`` rounds of void Qt
    calls. PySide6 6.12.0 on Python 3.11 drops one reference per call, and the interpreter
    eventually frees None ("Fatal Python error: none_dealloc"); a sound binding stays near 0."""
    import gc

    from PySide6.QtCore import QObject, Signal
    from PySide6.QtWidgets import QWidget

    class Emitter(QObject):
        void = Signal()
        flag = Signal(bool)

    widget, emitter = QWidget(), Emitter()
    emitter.void.connect(lambda: None)
    emitter.flag.connect(lambda _on: None)
    singletons = {"None": None, "True": True, "False": False}
    gc.collect()
    before = {k: sys.getrefcount(v) for k, v in singletons.items()}
    for i in range(n):
        app.processEvents()
        widget.update()
        emitter.void.emit()
        emitter.flag.emit(i % 2 == 0)
    gc.collect()
    after = {k: sys.getrefcount(v) for k, v in singletons.items()}
    widget.deleteLater()
    return {k: after[k] - before[k] for k in singletons}


def _write_report(report: Report, report_path: Path | None) -> None:
    if report_path is None:
        return
    with contextlib.suppress(OSError):
        report_path.parent.mkdir(parents=True, exist_ok=True)
        report_path.write_text(json.dumps(report.as_dict(), indent=2), encoding="utf-8")


class _Run:
    """The steps; each records a :class:`Step` and the first failure stops the run."""

    def __init__(self, report: Report, root: Path) -> None:
        self.report = report
        self.root = root
        self.app: Any = None
        self.db: Path | None = None
        self.window: Any = None
        self.session: Any = None
        self.painted = False
        self.before: list[Any] = []

    def step(self, name: str, fn: Callable[[], str]) -> bool:
        t0 = time.perf_counter()
        try:
            detail, ok = fn(), True
        except StepFailed as exc:
            detail, ok = str(exc), False
        except Exception as exc:
            detail, ok = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}", False
        self.report.steps.append(Step(name, ok, detail, round(time.perf_counter() - t0, 3)))
        return ok

    # -- 1 -------------------------------------------------------------------------------------
    def qt(self) -> str:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from PySide6 import __version__ as pyside_version
        from PySide6.QtCore import qVersion
        from PySide6.QtWidgets import QApplication

        app = QApplication.instance()
        if app is None:
            app = QApplication([sys.argv[0] if sys.argv else "Nocturne"])
            app.setApplicationName("Nocturne")
            app.setOrganizationName("Nocturne")
        self.app = app
        self.report.qt = f"Qt {qVersion()}, PySide6 {pyside_version}"
        self.report.qpa = QApplication.platformName()
        once, twice = binding_refcount_drift(app, 200), binding_refcount_drift(app, 400)
        for name in once:
            if abs(twice[name] - once[name]) > 10:
                raise StepFailed(
                    f"{self.report.qt}: sys.getrefcount({name}) drifts with the number of void "
                    f"Qt calls ({once[name]:+d} over 200, {twice[name]:+d} over 400); this binding "
                    "corrupts the interpreter (a long session aborts). Build with another PySide6.")
        return f"{self.report.qt} on the {self.report.qpa!r} platform; refcounts steady"

    # -- 2 -------------------------------------------------------------------------------------
    def package_data(self) -> str:
        from PySide6.QtGui import QIcon, QPixmap

        from nocturne_desktop import demo

        res = resources.files("nocturne_desktop.resources")
        names = ["nocturne.svg", "nocturne-16.png", "nocturne-256.png", "demo.json"]
        missing = [n for n in names if not res.joinpath(n).is_file()]
        if missing:
            raise StepFailed(f"package data missing: {', '.join(missing)}")
        with resources.as_file(res.joinpath("nocturne-256.png")) as png:
            pix = QPixmap(str(png))
        if pix.isNull() or pix.width() != 256:
            raise StepFailed("the 256 px icon does not load as an image")
        icon = QIcon(pix)
        data = demo.load_demo()
        return (f"icon {pix.width()}x{pix.height()} (null={icon.isNull()}), demo: "
                f"{len(data.turns)} turns, {len(data.facts)} facts")

    # -- 3 -------------------------------------------------------------------------------------
    def demo_store(self) -> str:
        from nocturne_desktop import demo
        from nocturne_desktop.core.checks.audit import traceability
        from nocturne_desktop.core.store import Store

        self.db = demo.open_demo_store(self.root / "data" / "demo")
        with Store(self.db) as store:
            facts = store.active_facts()
            trace = traceability(facts, [t.text for t in store.turns() if t.role == "user"])
        if len(facts) != len(demo.load_demo().facts) or trace.traceable != trace.total:
            raise StepFailed(f"{len(facts)} facts, {trace.traceable}/{trace.total} traceable: "
                             f"{trace.problems}")
        return f"{self.db.name}: {len(facts)} facts, all traceable"

    # -- 3b ------------------------------------------------------------------------------------
    def meaning_model(self) -> str:
        """The embedding model, offline: sockets refuse to connect while it loads and ranks."""
        import socket

        from nocturne_desktop.core.embedder import default_embedder, load_error
        from nocturne_desktop.core.store import Store

        def refuse(*_a: Any, **_k: Any) -> Any:
            raise OSError("the self-test blocks the network while the embedding model runs")

        saved = (socket.socket.connect, socket.create_connection, socket.getaddrinfo)
        socket.socket.connect = refuse  # type: ignore[method-assign]
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        try:
            model = default_embedder()
            if model is None:
                raise StepFailed(f"the embedding model did not load: {load_error()}")
            assert self.db is not None
            with Store(self.db) as store:
                if not store.vectors_complete():
                    raise StepFailed("the demo facts were written without their meaning vectors")
                hits = store.similar("Which city is she based in?", limit=3)
                texts = [f.text for f in store.active_facts() if int(f.id[2:]) in
                         {n for n, _ in hits}]
        finally:
            socket.socket.connect, socket.create_connection, socket.getaddrinfo = saved  # type: ignore[method-assign]
        if not any("Lisbon" in t for t in texts):
            raise StepFailed(f"'Which city is she based in?' did not find Lisbon: {texts}")
        return f"{model.name} ({model.dim} dimensions), offline; her city found by meaning"

    # -- 4 -------------------------------------------------------------------------------------
    def open_window(self, base_url: str) -> str:
        from PySide6.QtCore import QEvent, QObject

        from nocturne_desktop import demo

        assert self.db is not None
        run = self

        class PaintSpy(QObject):
            def eventFilter(self, watched: QObject, event: QEvent) -> bool:
                if event.type() == QEvent.Type.Paint:
                    run.painted = True
                return False

        spy = PaintSpy()
        from PySide6.QtCore import QSettings

        from nocturne_desktop.settings import Settings
        from nocturne_desktop.ui.mainwindow import MainWindow
        from nocturne_desktop.ui.session import Session

        settings = Settings(base_url=base_url, model=SELFTEST_MODEL,
                            retention=demo.demo_policy(), data_dir=str(self.db.parent))
        checked: list[tuple[bool, str]] = []
        self.session = Session(self.db, settings)
        self.session.endpointChecked.connect(lambda ok, msg, *_: checked.append((ok, msg)))
        qsettings = QSettings(str(self.root / "config" / "window.ini"), QSettings.Format.IniFormat)
        self.window = MainWindow(self.session, qsettings=qsettings)
        self.report.window = "MainWindow"
        self.window.installEventFilter(spy)
        self.window.show()
        self.session.check_endpoint()  # as ui.app.run() does once the window shows
        if not _wait(self.app, lambda: self.painted and self.window.isVisible(), 8.0):
            raise StepFailed("the window did not paint within 8 s")
        if not _wait(self.app, lambda: bool(checked), 5.0):
            raise StepFailed("the endpoint probe did not report within 5 s")
        ok, message = checked[-1]
        if not ok:
            raise StepFailed(f"the endpoint probe failed against the loopback server: {message}")
        self.window.removeEventFilter(spy)
        return f"{self.report.window} painted; endpoint probe: {message}"

    def _facts(self) -> list[Any]:
        assert self.session is not None, "the window step opens the session"
        return list(self.session.store.all_facts())

    # -- 5 -------------------------------------------------------------------------------------
    def first_run(self, base_url: str) -> str:
        """The no-server dialog finds the loopback server by port, on its worker thread."""
        from urllib.parse import urlsplit

        from nocturne_desktop.ui.firstrun import FirstRunDialog

        port = urlsplit(base_url).port
        assert port is not None
        dialog = FirstRunDialog("http://127.0.0.1:9/v1", "self-test", servers=[("self-test", port)],
                                host="127.0.0.1", timeout=3.0)
        chosen: list[tuple[str, str]] = []
        dialog.chosen.connect(lambda url, model: chosen.append((url, model)))
        try:
            dialog.show()
            dialog.detect()
            if not _wait(self.app, lambda: dialog.server_list.count() > 0 and not dialog.busy(), 6.0):
                raise StepFailed(f"detection found nothing: {dialog.detect_status.text()}")
            dialog.use_selected_server()
            if chosen != [(base_url, SELFTEST_MODEL)]:
                raise StepFailed(f"the dialog chose {chosen}, expected {base_url} / {SELFTEST_MODEL}")
        finally:
            dialog.close()
            dialog.deleteLater()
        return f"detected and chose {chosen[0][0]} ({chosen[0][1]})"

    # -- 6 -------------------------------------------------------------------------------------
    def rules_sleep(self) -> str:
        from nocturne_desktop.core.sleep import SleepEventKind

        assert self.session is not None, "the window step opens the session"
        session = self.session
        self.before = self._facts()
        events: list[Any] = []
        session.sleepEvent.connect(events.append)
        job = session.start_sleep(engine_only=True)
        if not _wait(self.app, lambda: any(e.kind.final for e in events) and not session.busy, 10.0):
            raise StepFailed("the rules-only sleep did not finish within 10 s")
        if not job.in_child:
            raise StepFailed("the sleep ran on a thread of the window, not in a worker process")
        kind, message = events[-1].kind, events[-1].message
        figures = {e.figures.pass_name: e.figures.accepted for e in events
                   if e.kind == SleepEventKind.PASS_DONE and e.figures is not None}
        if kind != SleepEventKind.DONE:
            raise StepFailed(f"sleep ended as {kind!r}: {message}")
        idle = [p for p in ("dedupe", "promote", "forget") if not figures.get(p)]
        if idle:
            raise StepFailed(f"passes that changed nothing on the demo: {idle} ({figures})")
        if self._facts() == self.before:
            raise StepFailed("the memory is unchanged after the sleep")
        return (f"in a worker process (pid {job.child_pid}); accepted per pass: "
                + ", ".join(f"{k}={v}" for k, v in figures.items()))

    # -- 7 -------------------------------------------------------------------------------------
    def undo(self) -> str:
        assert self.session is not None, "the window step opens the session"
        made: list[Any] = []
        failed: list[BaseException] = []
        self.session.undo_sleep(on_done=made.append, on_failure=failed.append)  # a job
        if not _wait(self.app, lambda: bool(made or failed) and not self.session.busy, 60.0):
            raise StepFailed("the undo did not finish within 60 s")
        if failed:
            raise StepFailed(f"the undo failed: {failed[0]}")
        version = made[0]
        _wait(self.app, lambda: False, 0.1)  # let the window redraw from the restore's commit
        after = self._facts()
        if after != self.before:
            changed = [a.id for a, b in zip(after, self.before, strict=False) if a != b]
            raise StepFailed(f"after undo {len(changed)} fact(s) differ from before the sleep: "
                             f"{changed[:8]} (counts {len(after)} vs {len(self.before)})")
        return f"{version.label} -> {version.id}: {len(after)} facts equal to before the sleep"

    # -- 8 -------------------------------------------------------------------------------------
    def close(self) -> str:
        from nocturne_desktop.core.store import Store

        if self.window is not None:
            self.window.close()
            _wait(self.app, lambda: not self.window.isVisible(), 3.0)
        leftover = ""
        if self.session is not None:
            self.session.shutdown(5000)
            jobs = importlib.import_module("nocturne_desktop.ui.jobs")
            running = jobs.running_threads()
            if running:
                leftover = f"{len(running)} worker thread(s) still running"
        assert self.db is not None
        with Store(self.db) as store:
            integrity = store.integrity_check()
        if leftover or integrity != "ok":
            raise StepFailed(leftover or f"integrity_check: {integrity}")
        return "window closed, no worker left, integrity_check ok"


def run_self_test(report_path: Path | None = None, *, time_limit_s: float = TIME_LIMIT_S,
                  keep_folder: bool = False) -> int:
    """Run every step; write the JSON report to ``report_path`` (if given); 0 when all pass."""
    t0 = time.perf_counter()
    report = Report()
    watchdog = _watchdog(time_limit_s, report, report_path)
    root = Path(tempfile.mkdtemp(prefix="nocturne-selftest-"))
    try:
        with _redirected_folders(root), _models_server() as base_url:
            run = _Run(report, root)
            steps: list[tuple[str, Callable[[], str]]] = [
                ("qt", run.qt),
                ("package data", run.package_data),
                ("demo memory", run.demo_store),
                ("meaning model", run.meaning_model),
                ("window", lambda: run.open_window(base_url)),
                ("first-run dialog", lambda: run.first_run(base_url)),
                ("rules-only sleep", run.rules_sleep),
                ("undo", run.undo),
                ("close", run.close),
            ]
            for name, fn in steps:
                if not run.step(name, fn):
                    with contextlib.suppress(Exception):
                        if run.session is not None:
                            run.session.shutdown(2000)
                    break
    finally:
        watchdog.cancel()
        report.seconds = round(time.perf_counter() - t0, 3)
        if not keep_folder and report.ok:
            shutil.rmtree(root, ignore_errors=True)
    _write_report(report, report_path)
    passed = sum(s.ok for s in report.steps)
    where = f"; report: {report_path}" if report_path is not None else ""
    if report.ok:
        _say(f"Nocturne self-test: OK ({passed}/{len(report.steps)} steps, {report.window}, "
             f"{report.seconds:.1f}s){where}")
        return 0
    failed = next(s for s in report.steps if not s.ok)
    _say(f"Nocturne self-test: FAIL at {failed.name!r}: {failed.detail.splitlines()[0]} "
         f"(data kept in {root}){where}")
    return 1
