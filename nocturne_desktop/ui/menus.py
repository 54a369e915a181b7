"""The window's actions, each with its shortcut and tip, and the menu bar they sit in."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu

if TYPE_CHECKING:
    from nocturne_desktop.ui.mainwindow import MainWindow


def action(window: QMainWindow, text: str, shortcut: str | QKeySequence.StandardKey | None,
           slot: Callable[..., object], tip: str = "") -> QAction:
    """An action of ``window`` (its shortcut works wherever the focus is in it); the tip
    names the shortcut."""
    a = QAction(text, window)
    if shortcut is not None:
        a.setShortcut(QKeySequence(shortcut))
        keys = a.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
        a.setToolTip(f"{tip or text} ({keys})")
    a.setStatusTip(tip or text)
    a.triggered.connect(slot)
    window.addAction(a)
    return a


class WindowActions:
    """Every menu item of ``win``, by name (``win.menus.sleep.trigger()``)."""

    def __init__(self, win: MainWindow) -> None:
        def make(text: str, shortcut: str | None, slot: Callable[..., object],
                 tip: str = "") -> QAction:
            return action(win, text, shortcut, slot, tip)

        self.settings = make("&Settings…", "Ctrl+,", win.open_settings,
                             "Model server, timeouts, retention policy, data folder")
        self.quit = make("&Quit", "Ctrl+Q", win.quit_app, "Close every Nocturne window")
        self.sleep = make("&Sleep", "Ctrl+Shift+S", win.start_sleep,
                          "Consolidate memory: Dedupe → Merge → Reconcile → Promote → Forget")
        self.dry = make("&Dry run", "Ctrl+Shift+D", win.start_dry_run,
                        "Run the passes without applying anything")
        self.rules = make("Sleep with &rules only", None, win.start_rules_sleep,
                          "Consolidate without the model: duplicate, reconcile, promotion and "
                          "capacity rules only, each labelled")
        self.review = make("Sleep with re&view…", None, win.open_review,
                           "Plan a sleep (a dry run), tick the changes to keep, apply them as one "
                           "sleep")
        self.stop = make("S&top / cancel", "Esc", win.stop,
                         "Stop the reply, the sleep or the quiz (a second Esc after a reply "
                         "stops remembering it)")
        self.undo_change = make("&Undo", "Ctrl+Z", win.undo_change,
                                "Undo the last change to memory, whoever made it (an edit by you "
                                "or a sleep), as a new version")
        self.redo = make("&Redo", "Ctrl+Shift+Z", win.redo_change,
                         "Make the last undone change again, as a new version")
        self.undo = make("&Undo last sleep", None, win.undo_last_sleep,
                         "Restore the state from before the last sleep, as a new version")
        self.quiz = make("Run &quiz", "Ctrl+Shift+Q", win.start_quiz,
                         "The Wake quiz: can the agent recall what it kept?")
        self.probe = make("Check &endpoint", "F5", win.session.check_endpoint,
                          "Ask the model server for its models")
        self.live = make("Back to &live", "Ctrl+L", win.back_to_live,
                         "Leave the read-only view of a past version")
        self.focus = make("Focus the message box", "Ctrl+K", win.chat.input.setFocus)
        self.search = make("&Search memory…", "Ctrl+F", win.focus_search,
                           "Search every fact, forgotten and superseded ones too")
        self.why = make("&Why do you remember this?", "Ctrl+I", win.show_lineage,
                        "The selected fact's lineage: turns, merges, drops, supersedes, each with "
                        "version and reason")
        self.new_conv = make("&New conversation", "Ctrl+N", win.new_conversation,
                             "A fresh transcript; memory is kept")
        self.conversations = make("&Conversations…", "Ctrl+O", win.open_conversations,
                                  "Every conversation: reopen one to continue it")
        self.first_run = make("&Connect to a model…", None, win.onboarding.open_first_run,
                              "Detect local servers, enter a URL, or use the built-in engine")
        self.demo = make("Open &demo memory", None, win.onboarding.open_demo,
                         "A ready-made memory in its own folder, to try Sleep, Diff and Undo")
        ex = win.exchange
        self.export_json = make(
            "Export memory as &JSON…", None, lambda: ex.export_memory(markdown=False),
            "Every fact with its full history, the versions, sleeps, audit log and "
            "conversations and the retention policy, in one file that imports back exactly")
        self.export_md = make(
            "Export memory as &Markdown…", None, lambda: ex.export_memory(markdown=True),
            "The facts by block, with dates, pins and the retention policy, as readable text "
            "(imports back its facts, not their history)")
        self.import_json = make(
            "&Import an export into a new memory folder…", None, ex.import_memory,
            "Read an export (JSON, or the Markdown export) into a new, empty data folder, with "
            "the retention policy it carries (this window's memory is not touched; pick this "
            "window's own folder to import its facts into scratch instead)")
        self.import_scratch = make(
            "Import facts from an export into &scratch…", None, ex.import_scratch_memory,
            "Add an export's active facts to this memory's scratch block as your own edits, "
            "duplicates skipped, in one version Ctrl+Z undoes")
        self.tabs = [make(f"{win.tabs.tabText(i)} tab", f"Ctrl+{i + 1}",
                          lambda _=False, i=i: win.tabs.setCurrentIndex(i))
                     for i in range(win.tabs.count())]
        self.shortcuts = make("&Keyboard shortcuts", "F1", win.show_shortcuts,
                              "Every key the window answers to")
        self.about = make("&About Nocturne", None, win.show_about, "Version, where memory is kept")
        self.exchange = (self.export_json, self.export_md, self.import_json, self.import_scratch)
        """One export or import at a time: these are off while one runs."""
        self.writing = (self.sleep, self.dry, self.rules, self.review, self.undo,
                        self.undo_change, self.redo, self.quiz, self.settings, self.new_conv)
        """Off while a job runs (each would write memory or replace the session's model)."""
        self._fill(win)

    def _fill(self, win: MainWindow) -> None:
        mb = win.menuBar()
        m_file = mb.addMenu("&File")
        for a in (self.new_conv, self.conversations, None, self.settings, self.first_run,
                  self.demo, None, *self.exchange, None, self.quit):
            _add(m_file, a)
        m_edit = mb.addMenu("&Edit")
        m_edit.addAction(self.undo_change)
        m_edit.addAction(self.redo)
        m_mem = mb.addMenu("&Memory")
        for a in (self.sleep, self.dry, self.rules, self.review, self.stop, None, self.undo,
                  self.live, self.why, self.search, None, self.quiz, self.probe):
            _add(m_mem, a)
        m_view = mb.addMenu("&View")
        for a in (self.focus, *self.tabs):
            m_view.addAction(a)
        m_help = mb.addMenu("&Help")
        m_help.addAction(self.shortcuts)
        m_help.addAction(self.about)

    def set_exchange_running(self, running: bool) -> None:
        for a in self.exchange:
            a.setEnabled(not running)


def _add(menu: QMenu, a: QAction | None) -> None:
    if a is None:
        menu.addSeparator()
    else:
        menu.addAction(a)
