"""The Settings dialog: every field of :class:`Settings`, plus the API key, the model list and
the chat's memory budget (sized from the model's context window, read off the GUI thread each
time the endpoint or the model changes).

``SettingsDialog.ask(...)`` is the one entry point the window uses; tests monkeypatch it, or
build the dialog, fill its fields and call :meth:`accept`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from PySide6.QtCore import QSize, Qt, QTimer, Slot
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core.chat import budget as chat_budget
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.types import CATEGORIES
from nocturne_desktop.llm import builtin as builtin_engine
from nocturne_desktop.llm.client import MODE_TEXT, structured_mode
from nocturne_desktop.settings import (
    BUILTIN,
    SERVER,
    ApiKey,
    AutoSleep,
    Settings,
    Timeouts,
    field_help,
    needs_key_confirmation,
)
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.jobs import Job, JobSlot, describe_error
from nocturne_desktop.ui.jobs.bodies.endpoint import (
    MemoryBudget,
    ModelList,
    list_models,
    memory_budget_of,
)
from nocturne_desktop.ui.plaintext import plain_labels

if TYPE_CHECKING:
    from nocturne_desktop.ui.letta import LettaLink

CAP_TEXT = {"supported": "supported", "unsupported": "unsupported (fallback used)",
            "untested": "not probed yet"}
RUNGS = (("json_schema", "json_schema"), ("json_object_schema", "json_object + schema"),
         ("json_object", "json_object"))
"""The rungs of the model client's structured-output ladder, as Settings names them."""
BUDGET_PAUSE_MS = 600
"""Typing pause in the endpoint's or the model's field before the context window is asked."""
BUDGET_HELP = (
    "The memory each chat prompt carries. It is sized from the context window the server says "
    "it runs the model with: the window less a tenth kept free, the reply cap, the earlier "
    f"turns and about {chat_budget.INSTRUCTION_TOKENS} tokens of instructions, at "
    f"{chat_budget.CHARS_PER_TOKEN} characters a token, between "
    f"{chat_budget.MIN_BUDGET_CHARS:,} and {chat_budget.MAX_BUDGET_CHARS:,} characters. A small "
    "model's tuning may cap it lower. When the server does not say its window, the default "
    f"{chat_budget.DEFAULT_BUDGET_CHARS:,} characters.")


def _spin(lo: float, hi: float, step: float, decimals: int, suffix: str = "") -> QDoubleSpinBox:
    s = QDoubleSpinBox()
    s.setRange(lo, hi)
    s.setSingleStep(step)
    s.setDecimals(decimals)
    if suffix:
        s.setSuffix(suffix)
    return s


class FitScroll(QScrollArea):
    """The settings' groups as tall as they are, up to what the screen has room for beside the
    title bar and the rest of the dialog (``outside()`` pixels): a scroll bar only on a screen
    too small for them, so OK and Cancel are always on screen."""

    TITLE_BAR = 40
    """Pixels kept for the window manager's title bar (the available height excludes panels)."""

    def __init__(self, outside: Callable[[], int]) -> None:
        super().__init__()
        self._outside = outside
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setWidgetResizable(True)
        # not vertically expanding: the dialog opens at the groups' height, not 2/3 of the screen
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)

    def _fit(self) -> QSize:
        body = self.widget()
        hint = body.sizeHint() if body is not None else QSize(0, 0)
        room = self.screen().availableGeometry().height() - self.TITLE_BAR - self._outside()
        if hint.height() <= room:
            return hint
        return QSize(hint.width() + self.verticalScrollBar().sizeHint().width(), max(room, 200))

    def sizeHint(self) -> QSize:
        return self._fit()

    def minimumSizeHint(self) -> QSize:
        return self._fit()


class SettingsDialog(QDialog):
    def _outside_groups(self) -> int:
        """The dialog's height beside its scrolled groups: margins, the error line, the buttons."""
        lay = self.layout()
        if lay is None:
            return 0
        m, gap = lay.contentsMargins(), max(lay.spacing(), 0)
        return (m.top() + m.bottom() + 2 * gap + self.error.sizeHint().height()
                + self.buttons.sizeHint().height())

    def showEvent(self, event: QShowEvent) -> None:
        plain_labels(self)  # server and model words are never rendered as markup
        super().showEvent(event)
        if self.budget_for is None and not self._budget_jobs.running:
            self.refresh_budget()
        QTimer.singleShot(0, self._grow_to_fit)

    def _grow_to_fit(self) -> None:
        """Once shown (its wrapped labels measured), as tall as its groups want, up to the
        screen's room (:class:`FitScroll`)."""
        self.groups_scroll.updateGeometry()  # its hint follows the groups' (not cached)
        lay = self.layout()
        if lay is not None:
            lay.activate()
        want = self.sizeHint().height()
        if self.height() < want:
            self.resize(self.width(), want)

    def __init__(self, settings: Settings, key: ApiKey, capabilities: dict[str, str] | None = None,
                 parent: QWidget | None = None, *, letta: LettaLink | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Nocturne — Settings")
        self.setMinimumWidth(700)
        self._initial = settings
        self._initial_key = key
        self.result_settings: Settings | None = None
        self.result_key: ApiKey | None = None
        self._jobs = JobSlot()
        """The model-list request; a new Refresh supersedes the last."""
        self._budget_jobs = JobSlot()
        """The context-window request; a newer endpoint or model supersedes the last."""
        self.budget_for: tuple[str, str, bool] | None = None
        """(base URL, model, built-in) of the memory budget shown (None: not read yet)."""

        # -- model server ------------------------------------------------------------------------
        self.base_url = QLineEdit(settings.base_url)
        self.base_url.setToolTip(field_help(Settings, "base_url"))
        self.use_builtin = QCheckBox("Use the built-in engine (started on a free port at each start)")
        self.use_builtin.setToolTip(field_help(Settings, "endpoint"))
        self.use_builtin.setChecked(settings.builtin)
        self.use_builtin.setEnabled(settings.builtin or builtin_engine.available())
        self.base_url.setEnabled(not settings.builtin)
        self.use_builtin.toggled.connect(lambda on: self.base_url.setEnabled(not on))
        self.api_key = QLineEdit(key.reveal())
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.api_key.setPlaceholderText("none (local servers need no key)")
        self.api_key.setToolTip("Stored in its own file with 0600 permissions; never logged or exported")
        self.model = QComboBox()
        self.model.setEditable(True)
        self.model.setMinimumContentsLength(24)
        self.model.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        if settings.model:
            self.model.addItem(settings.model)
        self.model.setCurrentText(settings.model)
        self.model.setToolTip(field_help(Settings, "model"))
        self.refresh = QPushButton("Refresh")
        self.refresh.setToolTip("Ask the server for its models (GET /models)")
        self.model_status = QLabel("")
        self.model_status.setTextFormat(Qt.TextFormat.PlainText)
        self.model_status.setWordWrap(True)

        model_row = QHBoxLayout()
        model_row.addWidget(self.model, 1)
        model_row.addWidget(self.refresh)
        t = settings.timeouts
        self.t_connect = _spin(0.5, 600, 1, 1, " s")
        self.t_connect.setValue(t.connect)
        self.t_first = _spin(1, 7200, 10, 0, " s")
        self.t_first.setValue(t.first_token)
        self.t_idle = _spin(1, 3600, 5, 0, " s")
        self.t_idle.setValue(t.idle)
        self.t_total = _spin(1, 14400, 60, 0, " s")
        self.t_total.setValue(t.total)
        for w, name in ((self.t_connect, "connect"), (self.t_first, "first_token"), (self.t_idle, "idle"),
                        (self.t_total, "total")):
            w.setToolTip(field_help(Timeouts, name))
        times = QHBoxLayout()
        for label, w in (("connect", self.t_connect), ("first token", self.t_first), ("idle", self.t_idle),
                         ("deadline", self.t_total)):
            times.addWidget(QLabel(label))
            times.addWidget(w)
        times.addStretch(1)
        self.temperature = _spin(0, 2, 0.1, 2)
        self.temperature.setValue(settings.temperature)
        self.temperature.setToolTip(field_help(Settings, "temperature"))
        self.budget = QSpinBox()
        self.budget.setRange(200, 200_000)
        self.budget.setSingleStep(250)
        self.budget.setSuffix(" tokens")
        self.budget.setValue(settings.pass_budget_tokens)
        self.budget.setToolTip(field_help(Settings, "pass_budget_tokens"))
        self.memory_budget = QLabel("")
        self.memory_budget.setTextFormat(Qt.TextFormat.PlainText)
        self.memory_budget.setWordWrap(True)
        self.memory_budget.setToolTip(BUDGET_HELP)
        # two lines from the start: the answer never makes the form lay itself out again
        self.memory_budget.setMinimumHeight(2 * self.memory_budget.fontMetrics().lineSpacing())
        self._budget_timer = QTimer(self)
        self._budget_timer.setSingleShot(True)
        self._budget_timer.setInterval(BUDGET_PAUSE_MS)
        self._budget_timer.timeout.connect(self.refresh_budget)
        self.caps = QLabel("")
        self.caps.setTextFormat(Qt.TextFormat.PlainText)
        self.caps.setToolTip("Structured output is asked for in the strongest form the endpoint accepts; "
                             "what it refused is remembered per base URL")
        self.set_capabilities(capabilities or {})
        server = QGroupBox("Model server")
        f1 = QFormLayout(server)
        f1.addRow("Base URL", self.base_url)
        f1.addRow("", self.use_builtin)
        f1.addRow("API key", self.api_key)
        f1.addRow("Model", model_row)
        f1.addRow("", self.model_status)
        f1.setRowVisible(self.model_status, False)  # shown once Refresh has something to say
        self._server_form = f1
        f1.addRow("Timeouts", times)
        f1.addRow("Temperature", self.temperature)
        f1.addRow("Chat memory", self.memory_budget)
        f1.addRow("Sleep request size", self.budget)
        f1.addRow("Structured output", self.caps)

        # -- retention policy --------------------------------------------------------------------
        p = settings.retention
        self.similarity = _spin(0.0, 1.0, 0.05, 2)
        self.similarity.setValue(p.similarity_threshold)
        self.stale = _spin(0.0, 36500, 1, 1, " days")
        self.stale.setValue(p.stale_after_days)
        self.max_active = QSpinBox()
        self.max_active.setRange(0, 1_000_000)
        self.max_active.setValue(p.max_active_facts)
        self.forget_below = _spin(0.0, 1000.0, 5, 1)
        self.forget_below.setValue(p.forget_below)
        self.forget_below.setToolTip(field_help(RetentionPolicy, "forget_below"))
        self.similarity.setToolTip(field_help(RetentionPolicy, "similarity_threshold"))
        self.stale.setToolTip(field_help(RetentionPolicy, "stale_after_days"))
        self.max_active.setToolTip(field_help(RetentionPolicy, "max_active_facts"))
        self.protected: dict[str, QCheckBox] = {}
        prot = QHBoxLayout()
        for c in CATEGORIES:
            box = QCheckBox(c)
            box.setChecked(c in p.protected_categories)
            self.protected[c] = box
            prot.addWidget(box)
        prot.addStretch(1)
        policy = QGroupBox("Retention policy (what Sleep may forget)")
        f2 = QFormLayout(policy)
        f2.addRow("Duplicate at similarity ≥", self.similarity)
        f2.addRow("Stale after", self.stale)
        f2.addRow("Max active facts", self.max_active)
        f2.addRow("Forget stale facts below salience", self.forget_below)
        f2.addRow("Protected categories", prot)

        # -- data ----------------------------------------------------------------------------------
        self.data_dir = QLineEdit(settings.data_dir)
        self.data_dir.setPlaceholderText("default user-data folder")
        self.data_dir.setToolTip(field_help(Settings, "data_dir") + " Takes effect at the next start.")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        data_row = QHBoxLayout()
        data_row.addWidget(self.data_dir, 1)
        data_row.addWidget(browse)
        data = QGroupBox("Data")
        f3 = QFormLayout(data)
        f3.addRow("Data folder", data_row)

        # -- automatic sleep (S-AUTO-1) ------------------------------------------------------------
        a = settings.auto_sleep
        self.auto_facts = QSpinBox()
        self.auto_facts.setRange(0, 100_000)
        self.auto_facts.setSpecialValueText("off")
        self.auto_facts.setSuffix(" new facts")
        self.auto_facts.setValue(a.after_facts)
        self.auto_facts.setToolTip(field_help(AutoSleep, "after_facts"))
        self.auto_idle = QSpinBox()
        self.auto_idle.setRange(0, 10_080)
        self.auto_idle.setSpecialValueText("off")
        self.auto_idle.setSuffix(" min idle")
        self.auto_idle.setValue(a.idle_minutes)
        self.auto_idle.setToolTip(field_help(AutoSleep, "idle_minutes"))
        self.auto_quit = QCheckBox("Sleep before quitting")
        self.auto_quit.setChecked(a.on_quit)
        self.auto_quit.setToolTip(field_help(AutoSleep, "on_quit"))
        auto = QGroupBox("Automatic sleep (never while a reply or a job runs)")
        f4 = QFormLayout(auto)
        f4.addRow("Sleep after", self.auto_facts)
        f4.addRow("Sleep when idle for", self.auto_idle)
        f4.addRow("", self.auto_quit)

        self.error = QLabel("")
        self.error.setTextFormat(Qt.TextFormat.PlainText)
        self.error.setWordWrap(True)
        pal = self.error.palette()
        pal.setColor(self.error.foregroundRole(), palette.accent("error"))
        self.error.setPalette(pal)
        sb = QDialogButtonBox.StandardButton
        self.buttons = QDialogButtonBox(sb.Ok | sb.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        body = QWidget()
        body.setMinimumWidth(1)  # the groups follow the dialog's width, as without a scroll area
        groups = QVBoxLayout(body)
        groups.setContentsMargins(0, 0, 0, 0)
        for group in (server, policy, data, auto):
            groups.addWidget(group)
        self.groups_scroll = FitScroll(self._outside_groups)
        self.groups_scroll.setWidget(body)
        lay = QVBoxLayout(self)
        lay.addWidget(self.groups_scroll)
        # Memory lives in: this computer / a Letta agent (the window's link, or the one given)
        self.memory_home = None
        letta = letta if letta is not None else getattr(parent, "letta", None)
        if letta is not None:
            from nocturne_desktop.ui.lettadialogs import MemoryHomeSection

            self.memory_home = MemoryHomeSection(letta, self)
            f3.addRow("Memory lives in", self.memory_home)
        lay.addWidget(self.error)
        lay.addWidget(self.buttons)

        self.use_builtin.toggled.connect(self.validate)
        for sig in (self.base_url.textChanged, self.model.currentTextChanged, self.data_dir.textChanged):
            sig.connect(self.validate)
        for spin in (self.t_connect, self.t_first, self.t_idle, self.t_total, self.temperature,
                     self.similarity, self.stale, self.forget_below):
            spin.valueChanged.connect(self.validate)
        self.max_active.valueChanged.connect(self.validate)
        for box in self.protected.values():
            box.toggled.connect(self.validate)
        self.refresh.clicked.connect(self.refresh_models)
        for changed in (self.base_url.textChanged, self.model.currentTextChanged,
                        self.api_key.textChanged, self.use_builtin.toggled):
            changed.connect(self._endpoint_edited)
        self.validate()

    # -- values ----------------------------------------------------------------------------------
    def build(self) -> Settings:
        """The settings the fields describe; raises ``ValidationError`` with the reason."""
        retention = RetentionPolicy(
            similarity_threshold=self.similarity.value(),
            stale_after_days=self.stale.value(),
            max_active_facts=self.max_active.value(),
            forget_below=self.forget_below.value(),
            protected_categories=tuple(c for c, b in self.protected.items() if b.isChecked()),
        )
        return Settings(
            endpoint=BUILTIN if self.use_builtin.isChecked() else SERVER,
            base_url=self.base_url.text(),
            model=self.model.currentText().strip(),
            timeouts=Timeouts(connect=self.t_connect.value(), first_token=self.t_first.value(),
                              idle=self.t_idle.value(), total=self.t_total.value()),
            temperature=self.temperature.value(),
            pass_budget_tokens=self.budget.value(),
            retention=retention,
            data_dir=self.data_dir.text().strip(),
            auto_sleep=AutoSleep(after_facts=self.auto_facts.value(),
                                 idle_minutes=self.auto_idle.value(),
                                 on_quit=self.auto_quit.isChecked()),
            key_host=self._initial.key_host,
        )

    @Slot()
    def validate(self) -> bool:
        try:
            self.build()
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            msg = str(err["msg"]).removeprefix("Value error, ")
            self.error.setText(f"{where.replace('_', ' ')}: {msg}" if where else msg)
            self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(False)
            return False
        self.error.setText("")
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(True)
        return True

    def set_capabilities(self, caps: dict[str, str]) -> None:
        parts = [f"{label}: {CAP_TEXT.get(caps.get(mode, 'untested'), caps.get(mode, ''))}"
                 for mode, label in RUNGS]
        in_use = structured_mode(caps)
        head = f"in use: {MODE_TEXT[in_use]}\n" if in_use is not None else ""
        self.caps.setText(head + " · ".join(parts))

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Data folder", self.data_dir.text())
        if folder:
            self.data_dir.setText(folder)

    # -- model list ------------------------------------------------------------------------------
    @Slot()
    def refresh_models(self) -> None:
        from nocturne_desktop.ui.clients import client_factory

        try:
            settings = self.build()
        except ValidationError:
            return
        key, withheld = self._outgoing_key(settings)
        body = functools.partial(list_models, client_factory=client_factory(settings, key))
        self.refresh.setEnabled(False)
        self._server_form.setRowVisible(self.model_status, True)
        where = builtin_engine.NAME if settings.builtin else settings.base_url
        self.model_status.setText(f"asking {where}/models …" + (
            " (without the API key: it was saved for another server; saving asks)"
            if withheld and not settings.builtin else ""))
        self._jobs.start(Job(body, name="models").success(self._on_listed).failure(self._on_failed))

    def _outgoing_key(self, settings: Settings) -> tuple[ApiKey, bool]:
        """The key the dialog's requests for ``settings`` carry, and whether the saved key was
        withheld: the saved key goes only to the server it was saved for until Save asks (a key
        typed here goes with the address typed with it); the built-in engine gets none."""
        key = ApiKey(self.api_key.text())
        withheld = key == self._initial_key and needs_key_confirmation(
            self._initial.key_host, settings.base_url, has_key=bool(key))
        return (ApiKey() if withheld or settings.builtin else key), withheld

    def _on_listed(self, listed: ModelList) -> None:
        models = listed.models
        self.refresh.setEnabled(True)
        current = self.model.currentText()
        self.model.clear()
        self.model.addItems(models)
        self.model.setCurrentText(current or (models[0] if models else ""))
        n = len(models)
        self.model_status.setText(f"{n} model{'s' if n != 1 else ''} available" if n else
                                  "the server lists no models")
        self.set_capabilities(listed.capabilities)

    def _on_failed(self, exc: BaseException) -> None:
        self.refresh.setEnabled(True)
        self.model_status.setText(describe_error(exc))

    # -- memory budget ---------------------------------------------------------------------------
    def _endpoint_edited(self, *_: object) -> None:
        """The endpoint, the key or the model changed: ask again once the typing pauses."""
        self._budget_jobs.cancel()
        self._budget_timer.start()

    @Slot()
    def refresh_budget(self) -> None:
        """Ask the server the fields name for the model's context window (off the GUI thread)
        and show the memory budget the chat sizes from it."""
        from nocturne_desktop.ui.clients import client_factory

        self._budget_timer.stop()
        try:
            settings = self.build()
        except ValidationError:
            self.memory_budget.setText("—")
            return
        asked = (settings.base_url, settings.model, settings.builtin)
        where = builtin_engine.NAME if settings.builtin else settings.base_url
        self._show_budget(f"reading the model's context window from {where} …")
        factory = client_factory(settings, self._outgoing_key(settings)[0], start_engine=False)
        body = functools.partial(memory_budget_of, client_factory=factory)
        self._budget_jobs.start(
            Job(body, name="memory-budget")
            .success(lambda b: self._on_budget(asked, b))
            .failure(lambda exc: self._on_budget_failed(asked, exc)))

    def _on_budget(self, asked: tuple[str, str, bool], budget: MemoryBudget) -> None:
        self.budget_for = asked
        self._show_budget(budget.describe())

    def _on_budget_failed(self, asked: tuple[str, str, bool], exc: BaseException) -> None:
        self.budget_for = asked
        why = describe_error(exc).rstrip(".")
        self._show_budget(
            f"unknown — using the default {chat_budget.DEFAULT_BUDGET_CHARS:,} characters\n"
            f"({why[:1].lower()}{why[1:]})")

    def _show_budget(self, text: str) -> None:
        """Set the budget's lines; the label keeps the height its wrapped text needs at its
        width (a form row does not ask a wrapped label by itself), so a longer text grows the
        dialog instead of being cut."""
        label = self.memory_budget
        label.setText(text)
        lines = 2 * label.fontMetrics().lineSpacing()
        label.setMinimumHeight(max(lines, label.heightForWidth(label.width())))

    def _stop_job(self) -> None:
        """Cancel the requests (their results are dropped). Not waited for: a stalled server
        holds a request until its timeout, and the dialog closes now; the job ends on its own
        (the window's shutdown waits for any job thread still running)."""
        self._budget_timer.stop()
        for slot in (self._jobs, self._budget_jobs):
            slot.cancel()
        if self.memory_home is not None:
            self.memory_home.stop()

    # -- closing ---------------------------------------------------------------------------------
    def accept(self) -> None:
        if not self.validate() or (self.memory_home is not None and not self.memory_home.ready()):
            return
        if self.memory_home is not None:
            self.memory_home.apply()
        self.result_settings = self.build()
        self.result_key = ApiKey(self.api_key.text())
        self._stop_job()
        super().accept()

    def reject(self) -> None:
        self._stop_job()
        super().reject()

    def done(self, r: int) -> None:
        self._stop_job()
        super().done(r)

    @classmethod
    def ask(cls, settings: Settings, key: ApiKey, capabilities: dict[str, str] | None = None,
            parent: QWidget | None = None) -> tuple[Settings, ApiKey] | None:
        """Show the dialog; the new settings and key, or None when cancelled."""
        dlg = cls(settings, key, capabilities, parent)
        try:
            if dlg.exec() == QDialog.DialogCode.Accepted and dlg.result_settings is not None:
                assert dlg.result_key is not None
                return dlg.result_settings, dlg.result_key
            return None
        finally:
            dlg.deleteLater()

    def values(self) -> dict[str, Any]:
        return self.build().model_dump()
