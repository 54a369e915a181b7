"""First run without a model server: find one, type one, or start the built-in engine.

:class:`FirstRunDialog` says that the configured endpoint does not answer and offers three ways
out, each ending in the ``chosen(base_url, model)`` signal:

- **Detect local servers**: probes LM Studio, Ollama, llama.cpp server and Jan on their usual
  ports at once (:mod:`nocturne_desktop.llm.detect`, in a worker thread) and lists what answers
  with its models;
- **Enter a URL**: any OpenAI-compatible base URL, checked with ``GET /models`` before it is
  accepted (``/v1`` is tried too when the URL lacks it);
- **Use the built-in engine**: the tiny local model ``make engine`` installs
  (:mod:`nocturne_desktop.llm.builtin`); the button is disabled, with the command to run,
  when it is not installed.

The dialog only proposes; whoever opens it applies the choice (settings, session)::

    choice = FirstRunDialog.ask(settings.base_url, session.endpoint_message, parent=window)
    if choice is not None:
        base_url, model = choice
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.llm import builtin as builtin_engine
from nocturne_desktop.llm.detect import (
    DEFAULT_TIMEOUT,
    KNOWN_SERVERS,
    LocalServer,
    ProbeResult,
    detect_local_servers,
    probe_all,
)
from nocturne_desktop.ui.jobs import AnyJob, Job, describe_error
from nocturne_desktop.ui.plaintext import plain_labels

T = TypeVar("T")

EngineStarter = Callable[[], tuple[str, str]]
"""Starts the built-in engine and returns (base_url, model); raises with a message otherwise."""


def start_builtin_engine() -> tuple[str, str]:
    engine = builtin_engine.start()
    return engine.base_url, engine.model_name


class FirstRunDialog(QDialog):
    """Signals: ``chosen(str base_url, str model)`` once a working endpoint is picked (the
    dialog then accepts); ``model`` may be empty (the server's default)."""

    chosen = Signal(str, str)

    def showEvent(self, event: QShowEvent) -> None:
        plain_labels(self)  # server and model words are never rendered as markup
        super().showEvent(event)

    def __init__(
        self,
        base_url: str,
        problem: str = "",
        *,
        servers: Sequence[tuple[str, int]] = KNOWN_SERVERS,
        host: str = "localhost",
        timeout: float = DEFAULT_TIMEOUT,
        engine_cache: Path | None = None,
        engine_starter: EngineStarter = start_builtin_engine,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Connect Nocturne to a model")
        self.servers_to_try = tuple(servers)
        self.host = host
        self.timeout = timeout
        self.engine_starter = engine_starter
        self.choice: tuple[str, str] | None = None
        self._jobs: dict[str, AnyJob] = {}
        self._closed = False
        self._started_engine = False
        """True once this dialog started the built-in engine itself (it stops it if unused)."""

        intro = QLabel(self)
        intro.setWordWrap(True)
        intro.setTextFormat(Qt.TextFormat.PlainText)
        why = f"\n{problem}" if problem else ""
        intro.setText(f"Nocturne cannot reach the model server at {base_url}.{why}\n\n"
                      "Pick another way to talk to a model:")
        self.intro = intro

        # 1. detect
        self.detect_button = QPushButton("&Detect local servers", self)
        self.detect_status = QLabel("LM Studio, Ollama, llama.cpp server and Jan, on their usual "
                                    "ports of this computer.", self)
        self.detect_status.setWordWrap(True)
        self.server_list = QListWidget(self)
        self.server_list.setMinimumHeight(90)
        self.model_box = QComboBox(self)
        self.model_box.setMinimumContentsLength(24)
        self.use_server_button = QPushButton("Use this &server", self)
        self.use_server_button.setEnabled(False)
        detect_box = QGroupBox("Servers on this computer", self)
        dl = QVBoxLayout(detect_box)
        row = QHBoxLayout()
        row.addWidget(self.detect_button)
        row.addWidget(self.detect_status, 1)
        dl.addLayout(row)
        dl.addWidget(self.server_list)
        row = QHBoxLayout()
        row.addWidget(QLabel("Model:", self))
        row.addWidget(self.model_box, 1)
        row.addWidget(self.use_server_button)
        dl.addLayout(row)

        # 2. a URL
        self.url_edit = QLineEdit(self)
        self.url_edit.setPlaceholderText("http://localhost:1234/v1")
        self.url_model_edit = QLineEdit(self)
        self.url_model_edit.setPlaceholderText("optional: the server's first model")
        self.use_url_button = QPushButton("Check and use this &URL", self)
        self.url_status = QLabel("", self)
        self.url_status.setWordWrap(True)
        url_box = QGroupBox("Another OpenAI-compatible server", self)
        form = QFormLayout(url_box)
        form.addRow("Base URL:", self.url_edit)
        form.addRow("Model:", self.url_model_edit)
        form.addRow(self.use_url_button, self.url_status)

        # 3. the built-in engine
        self.engine_button = QPushButton("Start the &built-in engine", self)
        self.engine_status = QLabel(self)
        self.engine_status.setWordWrap(True)
        self.engine_status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        engine_box = QGroupBox("Built-in engine", self)
        el = QVBoxLayout(engine_box)
        el.addWidget(QLabel(builtin_engine.LABEL[:1].upper() + builtin_engine.LABEL[1:] + ".", self))
        row = QHBoxLayout()
        row.addWidget(self.engine_button)
        row.addWidget(self.engine_status, 1)
        el.addLayout(row)
        self.engine_available = builtin_engine.available(engine_cache)
        self.engine_button.setEnabled(self.engine_available)
        self.engine_status.setText("" if self.engine_available else builtin_engine.install_hint())

        self.buttons = QDialogButtonBox(self)
        self.close_button = self.buttons.addButton("Not now", QDialogButtonBox.ButtonRole.RejectRole)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(detect_box)
        layout.addWidget(url_box)
        layout.addWidget(engine_box)
        layout.addWidget(self.buttons)
        self.resize(560, self.sizeHint().height())

        self.detect_button.clicked.connect(self.detect)
        self.server_list.currentItemChanged.connect(self._on_server_selected)
        self.server_list.itemDoubleClicked.connect(lambda _item: self.use_selected_server())
        self.use_server_button.clicked.connect(self.use_selected_server)
        self.use_url_button.clicked.connect(self.use_url)
        self.url_edit.returnPressed.connect(self.use_url)
        self.engine_button.clicked.connect(self.start_engine)

    # -- public API ----------------------------------------------------------------------------
    @classmethod
    def ask(cls, base_url: str, problem: str = "", parent: QWidget | None = None,
            **kwargs: Any) -> tuple[str, str] | None:
        """Show the dialog modally; the (base_url, model) picked, or None (tests monkeypatch)."""
        dialog = cls(base_url, problem, parent=parent, **kwargs)
        try:
            dialog.exec()
            return dialog.choice
        finally:
            dialog.deleteLater()

    def busy(self) -> bool:
        return any(not job.done for job in self._jobs.values())

    # -- jobs ----------------------------------------------------------------------------------
    def _run(self, name: str, fn: Callable[[], T], on_result: Callable[[T], None],
             on_failed: Callable[[str], None]) -> None:
        """One blocking call in a job (one per ``name`` at a time). Closing the dialog cancels
        its jobs, so a late result never reaches it."""
        old = self._jobs.get(name)
        if old is not None and not old.done:
            return
        def succeeded(value: T) -> None:
            if self.choice is None:
                on_result(value)

        def ended() -> None:
            if not self._closed:
                self._update_buttons()

        job = Job(lambda _ctx: fn(), name=f"firstrun-{name}").success(succeeded)
        job.failure(lambda exc: on_failed(describe_error(exc))).ended(ended)
        self._jobs[name] = job.start()
        self._update_buttons()

    def _update_buttons(self) -> None:
        running = {n for n, j in self._jobs.items() if not j.done}
        self.detect_button.setEnabled("detect" not in running)
        self.use_url_button.setEnabled("url" not in running)
        self.engine_button.setEnabled(self.engine_available and "engine" not in running)
        self.use_server_button.setEnabled(self.server_list.currentItem() is not None)

    def _finish(self, base_url: str, model: str) -> None:
        self.choice = (base_url, model)
        self.chosen.emit(base_url, model)
        self.accept()

    def done(self, result: int) -> None:
        """Close. Waits for running probes (a few seconds at most; an engine still loading its
        model up to its start timeout) so no thread outlives the dialog; their results are
        dropped. A built-in engine this dialog started but that was not chosen is stopped."""
        self._closed = True
        super().done(result)
        for job in self._jobs.values():
            job.cancel()
            job.wait(int((builtin_engine.START_TIMEOUT_S + 5) * 1000))
        if self._started_engine and (self.choice is None or self.choice[0] != self._engine_url()):
            builtin_engine.stop()

    @staticmethod
    def _engine_url() -> str:
        engine = builtin_engine.current()
        return engine.base_url if engine is not None else ""

    # -- 1. detect -----------------------------------------------------------------------------
    @Slot()
    def detect(self) -> None:
        servers, host, timeout = self.servers_to_try, self.host, self.timeout
        self.server_list.clear()
        self.model_box.clear()
        self.detect_status.setText("Looking…")
        self._run("detect", lambda: detect_local_servers(servers, host=host, timeout=timeout),
                  self._on_detected, self._on_detect_failed)

    def _on_detected(self, found: object) -> None:
        servers = [s for s in found if isinstance(s, LocalServer)] if isinstance(found, list) else []
        for server in servers:
            item = QListWidgetItem(server.describe(), self.server_list)
            item.setData(Qt.ItemDataRole.UserRole, server)
        if servers:
            self.detect_status.setText(f"Found {len(servers)}. Pick one and a model.")
            self.server_list.setCurrentRow(0)
        else:
            tried = ", ".join(f"{name} ({port})" for name, port in self.servers_to_try)
            self.detect_status.setText(f"Nothing answered on {tried}. Start one of them and "
                                       "detect again, enter a URL, or use the built-in engine.")
        self._update_buttons()

    def _on_detect_failed(self, message: str) -> None:
        self.detect_status.setText(f"Detection failed: {message}")

    def selected_server(self) -> LocalServer | None:
        item = self.server_list.currentItem()
        value = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        return value if isinstance(value, LocalServer) else None

    def _on_server_selected(self, *_args: object) -> None:
        self.model_box.clear()
        server = self.selected_server()
        if server is not None:
            self.model_box.addItems(list(server.models))
        self._update_buttons()

    @Slot()
    def use_selected_server(self) -> None:
        server = self.selected_server()
        if server is not None:
            self._finish(server.base_url, self.model_box.currentText())

    # -- 2. a URL ------------------------------------------------------------------------------
    @Slot()
    def use_url(self) -> None:
        text = self.url_edit.text().strip()
        if not text:
            self.url_status.setText("Type the server's base URL first, e.g. http://localhost:1234/v1")
            return
        url = text if "://" in text else "http://" + text
        scheme = url.split("://", 1)[0].lower()
        if scheme not in ("http", "https"):
            self.url_status.setText(f"The URL must start with http:// or https://, not {scheme}://")
            return
        url = url.rstrip("/")
        candidates = [(url, url)]
        if not url.endswith("/v1"):
            candidates.append((url + "/v1", url + "/v1"))
        timeout = self.timeout
        self.url_status.setText("Checking…")
        self._run("url", lambda: probe_all(candidates, timeout=timeout),
                  self._on_url_checked, lambda msg: self.url_status.setText(msg))

    def _on_url_checked(self, results: object) -> None:
        probes = [r for r in results if isinstance(r, ProbeResult)] if isinstance(results, list) else []
        ok = next((r.server for r in probes if r.server is not None), None)
        if ok is None:
            self.url_status.setText(probes[0].error if probes else "no answer")
            return
        model = self.url_model_edit.text().strip()
        if model and ok.models and model not in ok.models:
            self.url_status.setText(f"{ok.base_url} answers, but does not list {model!r}; it has: "
                                    + ", ".join(ok.models[:8]))
            return
        self.url_status.setText(f"{ok.base_url} answers.")
        self._finish(ok.base_url, model or (ok.models[0] if ok.models else ""))

    # -- 3. the built-in engine -----------------------------------------------------------------
    @Slot()
    def start_engine(self) -> None:
        if not self.engine_available:
            return
        self.engine_status.setText("Starting… (loading the model takes a few seconds)")
        if self.engine_starter is start_builtin_engine and builtin_engine.current() is None:
            self._started_engine = True
        self._run("engine", self.engine_starter, self._on_engine_started,
                  lambda msg: self.engine_status.setText(f"The built-in engine did not start: {msg}"))

    def _on_engine_started(self, value: object) -> None:
        if not (isinstance(value, tuple) and len(value) == 2):
            self.engine_status.setText(f"The built-in engine gave no address ({value!r})")
            return
        base_url, model = str(value[0]), str(value[1])
        self.engine_status.setText(f"Running at {base_url} ({model}).")
        self._finish(base_url, model)
