"""Render every panel of the window at 1280×800 from a seeded store, in light and dark palettes.

Offscreen, no model server: a small scripted model (below) answers the chat, the encoder, the
five sleep passes (including proposals the gates refuse) and the quiz, so every panel shows
real output of the real code paths. Writes ``docs/screenshots/<panel>-<theme>.png``.

Run: ``QT_QPA_PLATFORM=offscreen python scripts/screenshots.py [out_dir]``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pydantic.fields  # noqa: E402,F401  (import before Qt's import hook, see tests/conftest.py)
from pydantic import BaseModel, ValidationError  # noqa: E402
from PySide6.QtCore import QEventLoop, QSettings, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication, QStyleFactory  # noqa: E402

from nocturne_desktop.core.chat.agent import NOT_IN_MEMORY  # noqa: E402
from nocturne_desktop.core.ports import ChatResult, Message, StructuredResult, Usage  # noqa: E402
from nocturne_desktop.core.store import Store  # noqa: E402
from nocturne_desktop.core.types import FactDraft  # noqa: E402

DAY = 86400.0
W, H = 1280, 800

# block, category, text, age in days (turn numbers follow the order)
FACTS = [
    ("persona", "identity", "The assistant is called Nocturne and shows its memory on request.", 60),
    ("human", "identity", "The user lives in Lisbon.", 20),
    ("human", "preferences", "The user works best in the morning.", 20),
    ("human", "preferences", "The user drinks green tea, never coffee.", 18),
    ("scratch", "identity", "The user lives in Lisbon.", 1),
    ("scratch", "preferences", "The user keeps a bearded dragon called Saffron.", 1),
    ("scratch", "commitments", "The user promised to review the Airflow migration on Friday.", 1),
    ("scratch", "context", "The user's stack is Airflow and Postgres.", 2),
    ("scratch", "context", "The user's stack runs Airflow jobs nightly.", 2),
    ("scratch", "event", "The user gave a talk about data pipelines in Porto.", 3),
    ("episodes", "event", "The user went to a conference in Porto in the spring.", 70),
    ("episodes", "event", "The user fixed the garden fence after a storm.", 65),
    ("scratch", "context", "The user had toast for breakfast.", 45),
    ("scratch", "context", "The user was reading a long novel on the train.", 38),
    ("scratch", "identity", "The user has moved to Porto and lives in Porto now.", 0.5),
]

CHAT = [
    ("I just got back from Porto — I gave a talk about data pipelines there.",
     "Welcome back! A talk in Porto — how did the data-pipelines crowd take it?"),
    ("Pretty well. Also: Saffron, my bearded dragon, sends her regards.",
     "Please give Saffron my regards too. I've noted that she is your bearded dragon."),
]

MARKDOWN_REPLY = (
    "Memory is **one SQLite file** in your data folder. To keep a copy:\n\n"
    "1. Quit Nocturne (the file is closed cleanly).\n"
    "2. Copy the file somewhere *safe*:\n\n"
    "```sh\n"
    "cp ~/.local/share/nocturne/nocturne.db ~/backup/\n"
    "```\n\n"
    "- HTML such as <b>bold</b> or <img src=\"http://example.com/x.png\"> is shown as text\n"
    "- links open only when clicked: [the project page](https://example.com/nocturne)"
)


class ScriptedModel:
    """Answers like a cooperative (but imperfect) model, by the task in each request."""

    def __init__(self) -> None:
        self.questions: dict[str, str] = {}

    # -- ModelClient ---------------------------------------------------------------------------
    def chat(self, messages: Sequence[Message], **_: Any) -> ChatResult:
        text = self._answer(messages)
        return ChatResult(text, "stop", Usage(40, len(text) // 4))

    def stream(self, messages: Sequence[Message], **_: Any) -> Iterator[str]:
        yield from self._answer(messages).split(" ")

    def structured(self, messages: Sequence[Message], contract: type[BaseModel], **_: Any) -> Any:
        user = messages[-1]["content"]
        obj = self._propose(user)
        raw = json.dumps(obj)
        try:
            value = contract.model_validate(obj)
            error = None
        except ValidationError as exc:
            value, error = None, str(exc)
        return StructuredResult(value, raw, "json_schema", "stop", Usage(200, len(raw) // 4),
                                error=error)

    def close(self) -> None:
        pass

    # -- scripted behaviour --------------------------------------------------------------------
    def _answer(self, messages: Sequence[Message]) -> str:
        last = messages[-1]["content"]
        question = last.split("\n\n")[0]
        if question in self.questions:
            fact = self.questions[question]
            forgotten = ("toast", "novel", "fence", "conference")
            return NOT_IN_MEMORY if any(w in fact for w in forgotten) else fact
        return "Noted."

    def _propose(self, user: str) -> Any:
        if user.startswith("Fact: "):
            fact = user.split("\n")[0].removeprefix("Fact: ")
            q = f"Memory check {len(self.questions) + 1}: what do you recall here?"
            self.questions[q] = fact
            return {"question": q}
        if "NEW TURNS:" in user:
            return {"facts": []}
        payload = json.loads(user)
        task = payload.get("task")
        if task == "dedupe":
            pairs = payload["candidatePairs"]
            out = [{"itemId": p["dropId"], "duplicateOf": p["keeperId"], "reason": "same fact"}
                   for p in pairs[1:]]
            if pairs:  # a self-pair the gate must refuse; the duplicate rule drops it instead
                out.insert(0, {"itemId": pairs[0]["dropId"], "duplicateOf": pairs[0]["dropId"],
                               "reason": "duplicate"})
            return {"drop": out}
        if task == "merge":
            out = []
            for i, c in enumerate(payload["clusters"]):
                texts = [f["text"] for f in c["facts"]]
                merged = " ".join(texts) if i else " ".join(texts) + " Since 2019."
                out.append({"intoId": c["facts"][0]["itemId"],
                            "fromIds": [f["itemId"] for f in c["facts"][1:]],
                            "mergedText": merged, "reason": "one stack, one fact"})
            return {"merge": out}
        if task == "reconcile":
            return {"supersede": [{"oldId": p["oldId"], "newId": p["newId"],
                                   "reason": "the user moved: the newer home is current"}
                                  for p in payload["candidatePairs"]]}
        if task == "promote":
            return {"promote": [
                {"itemId": f["itemId"], "toBlock": "human", "reason": "durable fact about the user"}
                for f in payload["scratch"] if f["category"] in ("identity", "preferences")]}
        if task == "forget":
            return {"forget": [{"itemId": f["itemId"], "reason": "stale small talk",
                                "policy": f["rule"]} for f in payload["eligible"]]}
        return {}


def seed(db: Path) -> None:
    now = time.time()
    with Store(db) as store:
        for user, reply in CHAT:
            store.add_turn("user", user)
            store.add_turn("assistant", reply)
        for i, (block, cat, text, age) in enumerate(FACTS):
            store.append(block, FactDraft(text, cat, 1 + i % 4, now - age * DAY))


THEMES = ("light", "dark")
"""Every screenshot is made in both palettes."""


@contextmanager
def light_session(argv: Sequence[str], theme: str = "light"
                  ) -> Iterator[tuple[QApplication, Path, Path, Path]]:
    """The set-up of a one-shot script: ``(app, out, work, db)``.

    ``out`` is ``argv[1]`` or ``docs/screenshots`` (created); ``app`` uses Fusion with its light
    palette (or the window's dark one, ``theme="dark"``); ``work`` is a temporary folder
    (removed on exit) holding the config folder (``NOCTURNE_CONFIG_DIR``) and ``db``, a store
    seeded by :func:`seed`.
    """
    from nocturne_desktop.ui.palette import dark_palette

    out = Path(argv[1]) if len(argv) > 1 else ROOT / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication(list(argv[:1]))
    app.setStyle(QStyleFactory.create("Fusion"))
    app.setPalette(dark_palette() if theme == "dark" else app.style().standardPalette())
    with tempfile.TemporaryDirectory(prefix="nocturne-") as tmp:
        work = Path(tmp)
        os.environ["NOCTURNE_CONFIG_DIR"] = str(work / "config")
        db = work / "nocturne.db"
        seed(db)
        yield app, out, work, db


def each_palette(argv: Sequence[str], render: Callable[[Path, Path, Path, str], Any]) -> int:
    """The main loop of a screenshot script: for each palette of :data:`THEMES`, a fresh
    :func:`light_session` (its own temporary folder, config and seeded store) in which
    ``render(out, work, db, theme)`` runs; the window it returns (if any) is closed and its
    threads waited for before the folder goes."""
    for theme in THEMES:
        with light_session(argv, theme) as (_app, out, work, db):
            win = render(out, work, db, theme)
            if win is not None:
                win.close()
                win.session.wait_threads()
    return 0


def spin(predicate: Any, timeout_s: float = 30.0) -> None:
    loop = QEventLoop()
    poll = QTimer()
    poll.timeout.connect(lambda: loop.quit() if predicate() else None)
    poll.start(10)
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    if not predicate():
        loop.exec()
    poll.stop()


def pause(ms: int = 120) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def build_window(db: Path, folder: Path, model: ScriptedModel) -> Any:
    from nocturne_desktop.settings import ApiKey, Settings
    from nocturne_desktop.ui.mainwindow import MainWindow
    from nocturne_desktop.ui.session import Session

    session = Session(db, Settings(model="qwen2.5-7b-instruct"), ApiKey(), model_factory=lambda: model)
    win = MainWindow(session, qsettings=QSettings(str(folder / "window.ini"), QSettings.Format.IniFormat))
    win.resize(W, H)
    win.show()
    session.endpoint_ok, session.endpoint_message = True, "reachable (3 models)"
    win.status.update()
    # the conversation: the window shows the seeded turns itself (what the model still
    # receives), as after a restart; then the quiet line of the last encode
    from nocturne_desktop.ui.chat import describe_encode
    from nocturne_desktop.ui.jobs.bodies.chat import EncodeSummary

    # the line the window writes (describe_encode), not a copy of its wording
    win.chat.transcript.add_quiet(*describe_encode(EncodeSummary(
        remembered=(("m_10", "episodes", "The user gave a talk about data pipelines in Porto."),
                    ("m_6", "human", "The user keeps a bearded dragon called Saffron.")),
        refused=(("The user gave a talk in Porto in 2019.",
                  "introduces tokens not in the transcript: 2019"),))))
    win.chat.input.setPlainText("What do you remember about my pets?")
    return win


def save(shot: Any, out: Path, name: str) -> None:
    """Write the pixmap ``shot`` as ``out/<name>.png`` and say so."""
    shot.save(str(out / f"{name}.png"))
    print("wrote", out / f"{name}.png")


def shoot(win: Any, out: Path, name: str) -> None:
    pause()
    save(win.grab(), out, name)


def shoot_over(win: Any, out: Path, name: str, *popups: Any) -> None:
    """The window's grab with ``popups`` (menus, dialogs: each its own window offscreen) painted
    over it where they stand on screen."""
    from PySide6.QtGui import QPainter, QPalette
    from PySide6.QtWidgets import QDialog

    pause(200)
    shot = win.grab()
    painter = QPainter(shot)
    for popup in popups:
        at = win.mapFromGlobal(popup.mapToGlobal(popup.rect().topLeft()))
        painter.drawPixmap(at, popup.grab())
        if isinstance(popup, QDialog):  # offscreen, a dialog has no frame of its own: draw one
            painter.setPen(popup.palette().color(QPalette.ColorRole.Mid))
            painter.drawRect(at.x(), at.y(), popup.width() - 1, popup.height() - 1)
    painter.end()
    save(shot, out, name)


def shoot_hands(win: Any, out: Path, theme: str) -> None:
    """The person's hands: a pinned fact, an edited one, and the tree's context menu open on
    the pinned fact (a popup is its own window, so it is painted over the window's grab)."""
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QPainter

    win.back_to_live()
    win.tabs.setCurrentWidget(win.memory)
    win.memory.show_forgotten.setChecked(False)
    store = win.session.store
    saffron = next(f for f in store.active_facts() if "Saffron" in f.text)
    win.session.hand("pin", saffron.id)
    tea = next((f for f in store.active_facts() if "green tea" in f.text), None)
    if tea is not None:
        win.session.hand("edit", tea.id, text="The user drinks green tea in the morning, never coffee.")
    fact = store.get(saffron.id)
    view = win.memory.view
    idx = find_row(win, saffron.id)
    view.setCurrentIndex(idx)
    shoot(win, out, f"memory-pinned-{theme}")
    rect = view.visualRect(idx)
    at = view.viewport().mapToGlobal(QPoint(rect.left() + 120, rect.center().y()))
    menu = win.memory.menu_for(fact, fact.block if fact is not None else None)
    menu.popup(at)
    pause(200)
    shot = win.grab()
    painter = QPainter(shot)
    painter.drawPixmap(win.mapFromGlobal(menu.pos()), menu.grab())
    painter.end()
    save(shot, out, f"memory-edit-menu-{theme}")
    menu.close()
    # Forget now (Del) by hand, then the forgotten fact's own menu: Bring back
    stack = next(f for f in store.active_facts() if "runs Airflow jobs" in f.text)
    win.session.hand("forget_now", stack.id)
    win.memory.show_forgotten.setChecked(True)
    gone = store.get(stack.id)
    idx = find_row(win, stack.id)
    view.setCurrentIndex(idx)
    view.scrollTo(idx)
    rect = view.visualRect(idx)
    menu = win.memory.menu_for(gone, gone.block if gone is not None else None)
    menu.popup(view.viewport().mapToGlobal(QPoint(rect.left() + 300, rect.bottom() + 2)))
    shoot_over(win, out, f"memory-forget-now-{theme}", menu)
    menu.close()
    win.memory.show_forgotten.setChecked(False)


def find_row(win: Any, item_id: str) -> Any:
    """The tree's index (in its proxy) of the fact ``item_id``."""
    from nocturne_desktop.ui.models.roles import ROLE_OBJECT

    proxy = win.memory.proxy
    for b in range(proxy.rowCount()):
        block = proxy.index(b, 0)
        for r in range(proxy.rowCount(block)):
            idx = proxy.index(r, 0, block)
            if getattr(idx.data(ROLE_OBJECT), "id", None) == item_id:
                return idx
    raise LookupError(item_id)


def render(out: Path, work: Path, db: Path, theme: str) -> Any:
    from nocturne_desktop.ui.settings_dialog import SettingsDialog

    model = ScriptedModel()
    win = build_window(db, work, model)
    # Memory before anything else
    win.tabs.setCurrentWidget(win.memory)
    win.memory.show_forgotten.setChecked(False)
    shoot(win, out, f"memory-{theme}")
    # a real sleep through the worker
    win.start_sleep()
    spin(lambda: not win.session.busy)
    win.session.wait_threads()
    shoot(win, out, f"sleep-{theme}")
    win.tabs.setCurrentWidget(win.memory)
    win.memory.show_forgotten.setChecked(True)
    shoot(win, out, f"memory-after-sleep-{theme}")
    superseded = [f for f in win.session.store.all_facts() if f.superseded]
    if superseded:
        from nocturne_desktop.ui.models.roles import ROLE_OBJECT

        proxy, view = win.memory.proxy, win.memory.view
        for b in range(proxy.rowCount()):
            block = proxy.index(b, 0)
            for r in range(proxy.rowCount(block)):
                idx = proxy.index(r, 0, block)
                if getattr(idx.data(ROLE_OBJECT), "id", None) == superseded[0].id:
                    view.setCurrentIndex(idx)
                    view.scrollTo(idx)
        shoot(win, out, f"superseded-{theme}")
        dialog = win.open_lineage(str(superseded[0].superseded_by))  # the current fact's why
        spin(lambda: dialog.lineage is not None or dialog.error is not None)
        pause(300)
        save(dialog.grab(), out, f"lineage-{theme}")
        dialog.close()
    # search (Ctrl+F): active, forgotten and superseded hits, matched words marked
    win.memory.show_forgotten.setChecked(False)
    win.focus_search()
    query = "living in Lisbon, running Airflow"
    win.memory.search.field.setText(query)
    spin(lambda: win.memory.search.query == query)  # searched off the GUI thread
    shoot(win, out, f"search-{theme}")
    win.memory.search.field.clear()
    win.tabs.setCurrentWidget(win.diff)
    spin(lambda: win.diff.diff is not None)  # computed off the GUI thread
    shoot(win, out, f"diff-{theme}")
    # the same diff at 1024×700, a merge selected: the change read side by side, word by word
    win.resize(1024, 700)
    from nocturne_desktop.ui.models.roles import ROLE_OBJECT as _OBJ

    dm = win.diff.model
    for r in range(dm.rowCount()):
        e = dm.data(dm.index(r, 0), _OBJ)
        if e.sources and e.after is not None and e.before is not None:
            win.diff.table.setCurrentIndex(dm.index(r, 0))
            break
    shoot(win, out, f"diff-narrow-{theme}")
    win.resize(W, H)
    win.tabs.setCurrentWidget(win.timeline)
    versions = win.session.store.versions()
    win.timeline.select_version(versions[len(versions) // 2].seq)
    spin(lambda: win.memory.viewing is not None)
    shoot(win, out, f"timeline-{theme}")
    win.tabs.setCurrentWidget(win.memory)
    shoot(win, out, f"memory-version-{theme}")
    win.back_to_live()
    # a reply in Markdown (code, a list, emphasis, a link), and the HTML in it left as text
    win.chat.transcript.add_user("How do I back up my memory, and is <b>bold</b> HTML shown?")
    win.chat.transcript.add_reply(MARKDOWN_REPLY)
    shoot(win, out, f"chat-markdown-{theme}")
    shortcuts = win.show_shortcuts()
    pause()
    save(shortcuts.grab(), out, f"help-shortcuts-{theme}")
    shortcuts.close()
    # the quiz on its way (as it looks between two questions)
    from nocturne_desktop.core.checks.quiz import QuizProgress

    win.tabs.setCurrentWidget(win.wake)
    win.wake.set_busy("quiz")
    win.wake.show_progress(QuizProgress(3, 7, "question 3 of 5: asking about m_6"))
    shoot(win, out, f"wake-progress-{theme}")
    win.wake.set_busy("")
    win.start_quiz()
    spin(lambda: not win.session.busy)
    win.session.wait_threads()
    shoot(win, out, f"wake-{theme}")
    shoot_hands(win, out, theme)
    dlg = SettingsDialog(win.session.settings, win.session.api_key,
                         {"json_schema": "supported", "json_object": "unsupported"}, win)
    dlg.show()
    spin(lambda: dlg.budget_for is not None)  # the context window asked off the GUI thread
    pause()
    save(dlg.grab(), out, f"settings-{theme}")
    dlg.close()
    # the first run without a server: the banner, and the panel it opens
    win.session.endpoint_ok, win.session.endpoint_message = False, "connection refused"
    win.status.update()
    win.banner.show_problem("http://localhost:1234/v1",
                            "nothing is listening at http://localhost:1234/v1 — is LM Studio's "
                            "server running?")
    win.tabs.setCurrentWidget(win.memory)
    shoot(win, out, f"first-run-banner-{theme}")
    from nocturne_desktop.ui.firstrun import FirstRunDialog

    first = FirstRunDialog("http://localhost:1234/v1", "connection refused", servers=(),
                           parent=win)
    first.show()
    pause(300)
    save(first.grab(), out, f"first-run-{theme}")
    first.close()
    # Undo the sleep: memory lands on live and the sleep's header says it was undone
    win.banner.hide()
    win.undo_last_sleep()
    win.tabs.setCurrentWidget(win.timeline)
    shoot(win, out, f"timeline-undone-{theme}")
    return win


def main(argv: Sequence[str]) -> int:
    return each_palette(argv, render)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
