"""The Letta link's dialogs: Settings' "Memory lives in" section, the question of which side
wins when a memory and an agent both hold something, and the over-limit choice.

The section acts when Settings is accepted (Cancel changes nothing); its server, key and agent
are chosen in a dialog of their own, the agents listed from ``GET /v1/agents`` in a job, never
on the GUI thread; the key goes to a 0600 file in the config folder and the link keeps only its
path (:meth:`LettaLink.write_key`).
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.letta.client import Agent, LettaError, normalise_url, read_key_file
from nocturne_desktop.letta.lines import parse
from nocturne_desktop.letta.state import load
from nocturne_desktop.letta.sync import LABELS, ChooseSide
from nocturne_desktop.settings import ApiKey
from nocturne_desktop.ui import palette
from nocturne_desktop.ui.jobs import Job, JobSlot
from nocturne_desktop.ui.jobs.bodies.letta import agents_body
from nocturne_desktop.ui.letta import Side, sentence
from nocturne_desktop.ui.plaintext import plain_labels, set_tip

if TYPE_CHECKING:
    from nocturne_desktop.ui.letta import LettaLink

DEFAULT_URL = "http://127.0.0.1:8283"
"""Where ``letta server`` listens by default."""


def short_id(agent_id: str) -> str:
    """An agent's id short enough for a line of Settings (``agent-2693d20c…``)."""
    return agent_id if len(agent_id) <= 20 else agent_id[:14] + "…"


def agent_lines(agent: Agent) -> int:
    """The lines the link would read from the agent's blocks."""
    return sum(len(parse(b.value)) for b in agent.blocks if b.label in LABELS)


class LettaAgentDialog(QDialog):
    """Which Letta agent: the server, its key, and the agent chosen from ``GET /v1/agents``
    (listed in a job) or typed. Accepting it records the choice; Settings' OK links."""

    def showEvent(self, event: QShowEvent) -> None:
        plain_labels(self)  # a server's words are never rendered as markup
        super().showEvent(event)

    def __init__(self, url: str, key: str, agent: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Nocturne — keep memory in a Letta agent")
        self.setMinimumWidth(620)
        self._jobs = JobSlot()
        self.url = QLineEdit(url or DEFAULT_URL)
        self.url.setToolTip("The Letta server (`letta server` listens on port 8283)")
        self.key = QLineEdit(key)
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText("none (a server started without a password needs none)")
        self.key.setToolTip("Kept in its own file (0600) in the config folder; the link "
                            "keeps only that file's path")
        self.agent = QComboBox()
        self.agent.setEditable(True)
        self.agent.setMinimumContentsLength(36)
        if agent:
            self.agent.addItem(agent, agent)
        self.agent.setToolTip("The agent whose core-memory blocks hold this memory (agent-…)")
        self.list_button = QPushButton("List agents")
        self.list_button.setToolTip("Ask the server for its agents (GET /v1/agents)")
        self.list_button.clicked.connect(self.list_agents)
        agent_row = QHBoxLayout()
        agent_row.addWidget(self.agent, 1)
        agent_row.addWidget(self.list_button)
        self.message = QLabel("The agent's memory blocks become the live facts the agent reads; "
                              "this computer keeps the versions, the audit log and undo.")
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Letta server", self.url)
        form.addRow("Key", self.key)
        form.addRow("Agent", agent_row)
        sb = QDialogButtonBox.StandardButton
        self.buttons = QDialogButtonBox(sb.Ok | sb.Cancel, self)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.message)
        lay.addWidget(self.buttons)

    def _say(self, text: str, tone: str | None = None) -> None:
        self.message.setText(text)
        palette.set_tone(self.message, tone)

    def list_agents(self) -> None:
        """``GET /v1/agents`` in a job; the list fills the agent box."""
        try:
            url = normalise_url(self.url.text())
        except LettaError as exc:
            self._say(sentence(exc), "error")
            return
        body = functools.partial(agents_body, url=url, key=self.key.text().strip() or None)
        self.list_button.setEnabled(False)
        self._say(f"asking {url}/v1/agents …")
        self._jobs.start(Job(body, name="letta-agents").success(self._on_agents)
                         .failure(self._on_agents_failed))

    def _on_agents(self, agents: list[Agent]) -> None:
        self.list_button.setEnabled(True)
        chosen = self.chosen_agent()
        self.agent.clear()
        for a in agents:
            n = agent_lines(a)
            self.agent.addItem(f"{a.name} — {a.id} ({n} line{'s' if n != 1 else ''})", a.id)
        self.select_agent(chosen)
        n = len(agents)
        self._say(f"{n} agent{'s' if n != 1 else ''} on this server" if n else
                  "no agents on this server: make one in Letta first", None if n else "error")

    def _on_agents_failed(self, exc: BaseException) -> None:
        self.list_button.setEnabled(True)
        self._say(sentence(exc), "error")

    def select_agent(self, agent_id: str) -> bool:
        """Choose the listed agent ``agent_id`` (its name shown from the start)."""
        at = self.agent.findData(agent_id)
        if at >= 0:
            self.agent.setCurrentIndex(at)
            edit = self.agent.lineEdit()
            if edit is not None:
                edit.setCursorPosition(0)
        return at >= 0

    def chosen_agent(self) -> str:
        """The agent's id: the listed one chosen, or what was typed."""
        i = self.agent.currentIndex()
        text = self.agent.currentText().strip()
        if i >= 0 and self.agent.itemText(i) == self.agent.currentText():
            data = self.agent.itemData(i)
            if isinstance(data, str):
                return data
        return text

    def values(self) -> tuple[str, str, str]:
        """(server URL, agent id, key) as chosen."""
        return normalise_url(self.url.text()), self.chosen_agent(), self.key.text().strip()

    def accept(self) -> None:
        try:
            normalise_url(self.url.text())
        except LettaError as exc:
            self._say(sentence(exc), "error")
            return
        if not self.chosen_agent():
            self._say("Choose the agent (List agents) or type its id (agent-…).", "error")
            return
        self.stop()
        super().accept()

    def done(self, r: int) -> None:
        self.stop()
        super().done(r)

    def stop(self) -> None:
        """Drop the agents' listing; not waited for (a server that hangs holds the request
        until its timeout, and the dialog closes now), as Settings' own requests."""
        self._jobs.cancel()


class MemoryHomeSection(QWidget):
    """Settings → Memory lives in: this computer / a Letta agent (its server, key and agent
    chosen in :class:`LettaAgentDialog`), in two rows of Settings' Data group."""

    def __init__(self, link: LettaLink, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.link = link
        state = None
        with contextlib.suppress(NocturneError):  # unreadable: the mark says so
            state = load(link.session.store)
        key = ""
        if state is not None and state.key_file:
            try:
                key = read_key_file(state.key_file) or ""
            except LettaError:
                key = ""
        self.was = (state.url, state.agent, key) if state is not None else None
        """The link as it is: (server URL, agent, key), or None."""
        self.choice = self.was
        """The Letta agent chosen (the link as it is, until another is chosen)."""
        self.agent_dialog: LettaAgentDialog | None = None
        self.here = QRadioButton("This computer")
        self.here.setToolTip("Memory is this computer's SQLite store alone")
        self.letta = QRadioButton("A Letta agent")
        self.letta.setToolTip("The agent's core-memory blocks hold the live facts; this "
                              "computer keeps the versions, the audit log and undo")
        group = QButtonGroup(self)
        group.addButton(self.here)
        group.addButton(self.letta)
        (self.letta if state is not None else self.here).setChecked(True)
        self.choose_button = QPushButton("Letta agent…")
        self.choose_button.setToolTip("The Letta server, its key and the agent")
        self.choose_button.clicked.connect(self.open_agent_dialog)
        self.letta.clicked.connect(self._letta_clicked)
        self.here.toggled.connect(lambda _on: self._say_state())
        self.message = QLabel("")
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setWordWrap(True)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.here)
        row.addWidget(self.letta)
        row.addWidget(self.choose_button)
        row.addStretch(1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(row)
        lay.addWidget(self.message)
        self._say_state()

    def _say_state(self) -> None:
        palette.set_tone(self.message, None)
        status = self.link.status
        if self.here.isChecked():
            self.message.setText("unlinked when you press OK (the agent's blocks stay as they "
                                 "are)" if self.was is not None else
                                 "this computer's memory alone")
        elif self.choice is not None and self.choice != self.was:
            self.message.setText(f"linked to agent {short_id(self.choice[1])} on "
                                 f"{self.choice[0]} when you press OK")
        elif self.was is not None:
            mark = self.link.mark.text().removeprefix("● Letta: ") if status is not None else ""
            self.message.setText(f"linked to agent {short_id(self.was[1])} on {self.was[0]}"
                                 + (f" · {mark}" if mark else ""))
        agent = self.choice[1] if self.choice is not None else ""
        set_tip(self.message, "\n".join(status.lines()) if status is not None else agent)

    def _letta_clicked(self) -> None:
        if self.choice is None:
            self.open_agent_dialog()
        self._say_state()

    def open_agent_dialog(self) -> LettaAgentDialog:
        """The server, key and agent, in a dialog of its own (window-modal, not blocking)."""
        url, agent, key = self.choice or ("", "", "")
        dlg = LettaAgentDialog(url, key, agent, self.window())
        dlg.accepted.connect(lambda: self._chosen(dlg))
        dlg.rejected.connect(self._not_chosen)
        dlg.finished.connect(dlg.deleteLater)
        self.agent_dialog = dlg
        dlg.open()
        return dlg

    def _chosen(self, dlg: LettaAgentDialog) -> None:
        self.choice = dlg.values()
        self.letta.setChecked(True)
        self.agent_dialog = None
        self._say_state()

    def _not_chosen(self) -> None:
        self.agent_dialog = None
        if self.choice is None:
            self.here.setChecked(True)
        self._say_state()

    def ready(self) -> bool:
        """Whether Settings may be accepted (a Letta agent must have been chosen)."""
        if self.letta.isChecked() and self.choice is None:
            self.message.setText("Choose the Letta agent first (Letta agent…).")
            palette.set_tone(self.message, "error")
            return False
        return True

    def apply(self) -> None:
        """Settings was accepted: link, re-link or unlink as the section says (in jobs)."""
        if self.here.isChecked():
            if self.was is not None:
                self.link.unlink()
            return
        if self.choice is None or self.choice == self.was:
            return  # nothing changed
        url, agent, key = self.choice
        self.link.link(url, agent, ApiKey(key))

    def stop(self) -> None:
        if self.agent_dialog is not None:
            self.agent_dialog.stop()


def ask_side(parent: QWidget | None, exc: ChooseSide, agent: str) -> Side | None:
    """This memory and the agent both hold something: which side wins (None: do not link)."""
    box = QMessageBox(parent)
    box.setWindowTitle("Nocturne — which memory wins?")
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setIcon(QMessageBox.Icon.Question)
    box.setText(f"This memory holds {exc.facts} facts and agent {agent}'s blocks hold "
                f"{exc.lines} lines. Which side wins?")
    box.setInformativeText(
        "The agent's blocks: what differs becomes one version, changed in Letta, which undo "
        "takes back.\nThis memory: the agent's blocks are overwritten with its facts.")
    pull = box.addButton("The agent's blocks win", QMessageBox.ButtonRole.AcceptRole)
    push = box.addButton("This memory wins", QMessageBox.ButtonRole.AcceptRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    clicked = box.clickedButton()
    box.deleteLater()
    return "pull" if clicked is pull else "push" if clicked is push else None


def raised_limit(chars: int) -> int:
    """The limit the dialog offers: what the block needs, to the next thousand."""
    return max(1000, math.ceil(chars / 1000) * 1000)


class OverLimitDialog(QDialog):
    """Which block is over Letta's limit by how much, and the two ways out (the person's
    choice; nothing was cut). Signals ``raiseLimit(str label, int limit)``,
    ``keepSalient(str label)``; either closes the dialog."""

    raiseLimit = Signal(str, int)
    keepSalient = Signal(str)

    def showEvent(self, event: QShowEvent) -> None:
        plain_labels(self)
        super().showEvent(event)

    def __init__(self, blocks: list[tuple[str, int, int]], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Nocturne — a Letta block is over its limit")
        self.setModal(False)
        self.blocks = list(blocks)
        self.buttons: dict[str, tuple[QPushButton, QPushButton]] = {}
        lay = QVBoxLayout(self)
        for label, chars, limit in blocks:
            text = QLabel(
                f"The {label} block would hold {chars:,} characters: {chars - limit:,} over the "
                f"Letta agent's limit of {limit:,} for it. Nothing was cut: in Letta the block "
                "keeps what it held; the other blocks were written.", self)
            text.setTextFormat(Qt.TextFormat.PlainText)
            text.setWordWrap(True)
            new = raised_limit(chars)
            up = QPushButton(f"Raise Letta's limit to {new:,}", self)
            up.setToolTip(f"Letta's {label} block may then hold {new:,} characters; every fact "
                          "stays")
            keep = QPushButton("Keep the most salient lines", self)
            keep.setToolTip(f"Forget the least salient facts of the {label} block until the "
                            f"rest fits in {limit:,} characters (pinned facts stay): one "
                            "version, which undo brings back")
            up.clicked.connect(lambda _=False, lb=label, n=new: self._choose(self.raiseLimit, lb, n))
            keep.clicked.connect(lambda _=False, lb=label: self._choose(self.keepSalient, lb))
            row = QHBoxLayout()
            row.addWidget(up)
            row.addWidget(keep)
            row.addStretch(1)
            lay.addWidget(text)
            lay.addLayout(row)
            self.buttons[label] = (up, keep)
        later = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        later.button(QDialogButtonBox.StandardButton.Close).setText("Not now")
        later.rejected.connect(self.reject)
        lay.addWidget(later)
        self.setMinimumWidth(560)

    def _choose(self, signal: object, *args: object) -> None:
        signal.emit(*args)  # type: ignore[attr-defined]
        self.accept()
