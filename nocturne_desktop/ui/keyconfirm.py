"""The API key goes only to the server it was saved for, unless the person says yes (S-DOOR-4).

The settings remember which server the key was saved for (``Settings.key_host``, a
``scheme://host:port``). The session sends no key anywhere else (:meth:`Session.request_key`),
so a newly typed address, a settings file edited by hand or a key saved before this rule never
carries the key before the person answers. The window asks once, when the settings are saved
and at start-up: "Send your API key to <server>? It was saved for <other server>." Yes saves
``key_host`` as that server; no sends requests there without a key for the rest of the session
(the key stays saved, and the next start asks again). A key typed into the Settings dialog goes
with the address typed with it, without a question.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QMainWindow, QMessageBox, QWidget

from nocturne_desktop.core.errors import NocturneError
from nocturne_desktop.settings import ApiKey, Settings, key_origin
from nocturne_desktop.ui.plaintext import message_box, warn

if TYPE_CHECKING:
    from nocturne_desktop.ui.session import Session


def question_text(server: str, saved_for: str) -> str:
    """What the window asks before the API key goes to a server it was not saved for."""
    where = (f"It was saved for {saved_for}." if saved_for else
             "It was saved before Nocturne noted which server a key is for.")
    return (f"Send your API key to {server}? {where}\n\nNo: requests go there without a key "
            "this session; the key stays saved.")


def ask(parent: QWidget | None, server: str, saved_for: str,
        shown: Callable[[QMessageBox], None] = lambda _box: None) -> bool:
    """Ask the question in a modal, plain-text box (No is the default); whether it was yes.
    ``shown(box)`` is called with the box before it waits for the answer."""
    box = message_box(parent, QMessageBox.Icon.Question, question_text(server, saved_for),
                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                      title="Send the API key?")
    box.setDefaultButton(QMessageBox.StandardButton.No)
    shown(box)
    try:
        return box.exec() == QMessageBox.StandardButton.Yes
    finally:
        box.deleteLater()


class KeyConfirmation:
    """The window's side of the rule: :meth:`before_saving` and :meth:`at_start`. ``ask`` is
    the question (tests replace it); ``box`` is the question's box while it is open."""

    def __init__(self, window: QMainWindow, session: Session) -> None:
        self.window = window
        self.session = session
        self.box: QMessageBox | None = None
        self.ask: Callable[[str, str], bool] = self._ask

    def _ask(self, server: str, saved_for: str) -> bool:
        def keep(box: QMessageBox) -> None:
            self.box = box

        try:
            return ask(self.window, server, saved_for, keep)
        finally:
            self.box = None

    def confirm(self, settings: Settings, key: ApiKey) -> Settings:
        """``settings`` with ``key_host`` set to their server if the person says yes; unchanged
        when there is nothing to ask or on no (the session then sends no key there)."""
        asked = self.session.key_question(settings, key)
        if asked is None:
            return settings
        server, saved_for = asked
        if self.ask(server, saved_for):
            return settings.model_copy(update={"key_host": server})
        self.session.decline_key(server)
        self.window.statusBar().showMessage(f"The API key is not sent to {server}.", 8000)
        return settings

    def before_saving(self, settings: Settings, key: ApiKey) -> Settings:
        """The settings the Settings dialog's OK saves: a key typed there belongs to the
        address typed with it; a saved key going to another server is asked about."""
        if key != self.session.api_key:
            settings = settings.model_copy(update={"key_host": key_origin(settings.base_url)
                                                   if key else ""})
        return self.confirm(settings, key)

    def at_start(self) -> None:
        """Start-up, before anything is sent: the saved settings name a server the key was
        not saved for (the file was edited, or the key predates the rule)."""
        s = self.session
        settings = self.confirm(s.settings, s.api_key)
        if settings is not s.settings:
            try:
                s.apply_settings(settings)
            except (OSError, NocturneError) as exc:
                warn(self.window, f"The settings could not be saved: {exc}")
