"""The window's Letta link where no Letta server is needed: a server that is gone or hangs (a
real socket), the mark's words, the banner's one sentence, a job's syncs skipped after a
failure so that the person never waits twice, and a server's words shown literally."""

from __future__ import annotations

import functools
import socket
import threading
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from nocturne_desktop.core.store import Store
from nocturne_desktop.letta.client import LettaAuthError, LettaUnreachable
from nocturne_desktop.letta.state import LinkState, load, save
from nocturne_desktop.letta.sync import LinkStatus, link_status
from nocturne_desktop.ui.jobs import Job
from nocturne_desktop.ui.jobs.bodies import letta as bodies
from nocturne_desktop.ui.jobs.body import BodyContext
from nocturne_desktop.ui.letta import banner_sentence, describe, sentence
from tests.core.fakemodel import FakeModel
from tests.fakeserver import closed_port_url
from tests.ui.conftest import seed_store


class Hanging:
    """A TCP server on loopback that takes every connection and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.connections: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections.append(conn)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()
        for c in self.connections:
            c.close()


@pytest.fixture
def hanging() -> Iterator[Hanging]:
    server = Hanging()
    yield server
    server.close()


def link_to(db: Path, url: str) -> None:
    with Store(db) as store:
        save(store, LinkState(url=url, agent="agent-00000000-gone", linked_at=time.time()))


def three_commits(ctx: BodyContext) -> Generator[str, None, int]:
    for text in ("The user swims on Tuesdays.", "The user is learning the cello.",
                 "The user's sister Ana lives in Porto."):
        ctx.store.add_fact("human", text, "context")
        yield text
    return 3


def run(qtbot: Any, job: Job[Any, Any]) -> tuple[float, list[Any], Any]:
    got: list[Any] = []
    result: list[Any] = []
    job.on_yield(got.append).success(result.append)
    t0 = time.perf_counter()
    with qtbot.waitSignal(job.worker_thread.finished, timeout=30_000):
        job.start()
    return time.perf_counter() - t0, got, result[0] if result else None


def test_a_server_that_hangs_costs_a_job_one_timeout_and_the_next_job_none(
    qtbot: Any, db_path: Path, hanging: Hanging,
) -> None:
    link_to(db_path, hanging.url)
    body = functools.partial(bodies.linked, body=three_commits, timeout=0.5)
    took, items, value = run(qtbot, Job(body, name="chat", db_path=db_path))
    # the body ran whole, its yields and return value as they were
    assert len(items) == 3 and value == 3
    # one request waited (the sync before the body), none after each of its three commits
    assert len(hanging.connections) == 1 and took >= 0.5
    with Store(db_path) as store:
        status = link_status(store)
        assert status is not None and "did not answer in time" in (status.last_error or "")
        assert status.pending == ("human",)  # kept for the window's retry
        assert [f.text for f in store.active_facts()][-1] == "The user's sister Ana lives in Porto."
    # the next job within the quiet time sends nothing at all
    took, items, _ = run(qtbot, Job(body, name="chat", db_path=db_path))
    assert len(items) == 3 and len(hanging.connections) == 1


def test_a_plain_body_and_a_memory_not_linked_run_as_they_are(qtbot: Any, db_path: Path) -> None:
    seed_store(db_path)
    body = functools.partial(bodies.linked, body=lambda ctx: ctx.store.active_count())
    _, items, value = run(qtbot, Job(body, name="plain", db_path=db_path))
    assert items == [] and value == 9


def test_a_window_on_a_memory_whose_server_is_gone_says_so_once_and_stays_usable(
    qtbot: Any, make_window: Any, db_path: Path,
) -> None:
    seed_store(db_path)
    link_to(db_path, closed_port_url().removesuffix("/v1"))
    model = FakeModel()
    model.when("NEW TURNS:", {"facts": [
        {"text": "The user swims in the sea in summer.", "category": "context", "turn": 1}]})
    model.queue("Noted.")
    win = make_window(model_factory=lambda: model)
    link = win.letta
    assert link.linked and win.session.wrap_body is not None
    qtbot.waitUntil(lambda: link.error is not None and not link.running, timeout=30_000)
    assert isinstance(link.error, LettaUnreachable)
    banner = link.banner
    assert banner.isVisible()
    text = banner.text.text()
    assert text.startswith("The Letta server at http://127.0.0.1:") and text.endswith(".")
    assert "cannot be reached" in text and "nothing was lost" in text and ". " not in text
    assert "(" not in text and len(text) < 130  # one line at the window's width
    assert "connection refused" in banner.text.toolTip()  # the socket's words on hover
    assert link.mark.text() == "● Letta: unreachable" and link.mark.tone == "error"
    assert "pending: persona, human, episodes, scratch" in link.mark.toolTip()
    assert link.retry.isActive()
    # a change by hand lands at once; its sync waits for no one and fails the same way
    t0 = time.perf_counter()
    win.session.hand("add_fact", "human", "The user runs on Sundays.", "context")
    assert time.perf_counter() - t0 < 1.0
    assert any(f.text == "The user runs on Sundays." for f in win.memory.model.facts("human"))
    # a chat turn goes through (its own syncs skip while the last one failed)
    with qtbot.waitSignal(win.session.chatEncoded, timeout=30_000):
        win.session.send("In summer I swim in the sea.")
    qtbot.waitUntil(lambda: not win.session.busy and not link.running, timeout=30_000)
    with Store(db_path) as store:
        status = link_status(store)
        assert status is not None and status.pending == ("persona", "human", "episodes", "scratch")
        assert load(store) is not None  # the link is kept
    # Dismiss hides the banner; Retry now syncs (and fails again, saying so)
    banner.dismiss.click()
    assert not banner.isVisible()
    with qtbot.waitSignal(link.synced, timeout=30_000) as got:
        link.mark.sync_now.trigger()
    assert isinstance(got.args[0].error, LettaUnreachable) and banner.isVisible()


def status(**kw: Any) -> LinkStatus:
    base: dict[str, Any] = {
        "url": "http://127.0.0.1:8283", "agent": "agent-1", "key_file": None, "linked_at": 1.0,
        "last_pull": None, "last_push": None, "last_error": None, "error_at": None,
        "pending": (), "over_limit": {}, "blocks": {"human": (3, 21_340, 20_000)},
        "last_sync": time.time(),
    }
    base.update(kw)
    return LinkStatus(**base)


def test_the_mark_says_linked_last_sync_pending_over_the_limit_and_errors() -> None:
    text, tone, tip = describe(status(), syncing=False, error=None, last_ok=None)
    assert text.startswith("in sync · ") and tone == "ok"
    assert "linked to agent agent-1 on http://127.0.0.1:8283" in tip and "last sync:" in tip
    assert describe(status(), syncing=True, error=None, last_ok=None)[:2] == ("syncing…", "running")
    assert describe(status(pending=("human", "scratch")), syncing=False, error=None,
                    last_ok=None)[:2] == ("2 blocks to write", "changed")
    over = status(pending=("human",), over_limit={"human": "…"})
    assert describe(over, syncing=False, error=None, last_ok=None)[0] == "human over the limit"
    gone = LettaUnreachable("the Letta server at http://127.0.0.1:8283 cannot be reached")
    failed = status(last_error=str(gone), error_at=2.0)
    assert describe(failed, syncing=False, error=gone, last_ok=None)[:2] == ("unreachable", "error")
    assert describe(failed, syncing=False, error=None, last_ok=None)[0] == "unreachable"
    refused = status(last_error="the Letta server refused it", error_at=2.0)
    assert describe(refused, syncing=False, error=None, last_ok=None)[0] == "sync failed"


def test_the_banner_sentence_is_one_sentence_and_a_refused_key_points_to_settings() -> None:
    s = sentence(LettaUnreachable("the Letta server at http://x:1 did not answer in time "
                                  "(reading the blocks); nothing was lost, the sync is tried again"))
    assert s.startswith("The Letta server") and s.endswith("tried again.")
    gone_server = LettaUnreachable("the Letta server at http://x:1 cannot be reached (reading "
                                   "agent agent-1's memory blocks: connection refused or no "
                                   "route); nothing was lost, the sync is tried again when it "
                                   "answers")
    assert banner_sentence(gone_server) == ("The Letta server at http://x:1 cannot be reached; "
                                            "nothing was lost, the sync is tried again when it "
                                            "answers.")
    assert "connection refused" in sentence(gone_server)
    key = sentence(LettaAuthError("the Letta server at http://x:1 refused the request (reading "
                                  "the blocks): HTTP 401; give its key with --api-key-file"))
    assert "Settings" in key and "--api-key-file" not in key
    gone = sentence(LettaAuthError("cannot read the Letta key file /k/letta_api_key: No such file"))
    assert gone.startswith("Cannot read the Letta key file") and "Settings" in gone


def test_settings_memory_lives_in_cancelled_changes_nothing_and_a_bad_server_is_said(
    qtbot: Any, make_window: Any, tmp_folders: dict[str, Path],
) -> None:
    from nocturne_desktop.ui.settings_dialog import SettingsDialog

    win = make_window()
    dlg = SettingsDialog(win.session.settings, win.session.api_key, {}, win)
    home = dlg.memory_home
    assert home is not None and home.here.isChecked() and not win.letta.linked
    home.letta.click()  # no agent chosen yet: its dialog opens (not blocking the window)
    chooser = home.agent_dialog
    assert chooser is not None and chooser.isVisible()
    assert all(lab.textFormat() == Qt.TextFormat.PlainText for lab in chooser.findChildren(QLabel))
    # a server where nothing listens: said in one sentence, from a job (the click returns at once)
    chooser.url.setText(closed_port_url().removesuffix("/v1"))
    t0 = time.perf_counter()
    chooser.list_agents()
    assert time.perf_counter() - t0 < 0.5 and not chooser.list_button.isEnabled()
    qtbot.waitUntil(chooser.list_button.isEnabled, timeout=15_000)
    assert "cannot be reached" in chooser.message.text()
    # no agent: its OK says what is missing and stays open
    chooser.accept()
    assert chooser.isVisible() and "Choose the agent" in chooser.message.text()
    chooser.reject()
    assert home.here.isChecked() and home.choice is None
    # "A Letta agent" without one chosen: Settings' OK is refused with the reason
    home.letta.setChecked(True)
    home.stop()
    assert not home.ready() and "Choose the Letta agent first" in home.message.text()
    dlg.reject()
    assert load(win.session.store) is None and not win.letta.running
    assert not list(tmp_folders["config"].glob("letta*"))


def test_the_letta_banner_mark_and_dialogs_show_a_servers_words_literally(
    qtbot: Any, make_window: Any, db_path: Path, tmp_path: Path,
) -> None:
    from nocturne_desktop.letta.client import Agent, LettaRefused
    from nocturne_desktop.ui.lettadialogs import LettaAgentDialog, OverLimitDialog
    from tests.ui.markupcheck import Walk, hostile_texts, make_image

    texts = hostile_texts(make_image(tmp_path / "pixel.png"))
    seed_store(db_path)
    url = closed_port_url().removesuffix("/v1")
    link_to(db_path, url)
    win = make_window(model_factory=FakeModel)
    link = win.letta
    qtbot.waitUntil(lambda: link.error is not None and not link.running, timeout=30_000)
    # a server's own words: an error message, an agent's name, the mark's last error
    link.banner.show_error(LettaRefused(texts["heading"]))
    link.mark.show_state("error", "error", f"{texts['image']}\nlast error: {texts['link']}",
                         over=True)
    chooser = LettaAgentDialog(url, "", "", win)
    chooser.show()
    chooser._on_agents([Agent(id="agent-1", name=texts["link"])])
    chooser._on_agents_failed(LettaRefused(texts["image"]))
    over = OverLimitDialog([("human", 21_340, 20_000)], win)
    over.show()
    walk = Walk()
    walk.widgets([win, chooser, over])
    assert not walk.bad, "\n".join(walk.bad)
    assert walk.hostile >= 4, walk.hostile
    for cls in ("LettaBanner", "LettaMark", "LettaAgentDialog", "OverLimitDialog"):
        assert cls in walk.classes, cls
    chooser.reject()
    over.reject()


def test_settings_with_a_letta_link_keeps_ok_and_cancel_on_a_screen_800_pixels_high(
    qtbot: Any, make_window: Any, db_path: Path,
) -> None:
    from PySide6.QtWidgets import QDialogButtonBox

    from nocturne_desktop.ui.settings_dialog import FitScroll, SettingsDialog

    seed_store(db_path)
    link_to(db_path, closed_port_url().removesuffix("/v1"))
    win = make_window(model_factory=FakeModel)
    qtbot.waitUntil(lambda: win.letta.error is not None and not win.letta.running, timeout=30_000)
    probed = {"json_schema": "supported", "json_object": "unsupported"}
    dlg = SettingsDialog(win.session.settings, win.session.api_key, probed, win)
    dlg.show()
    home = dlg.memory_home
    assert home is not None and home.letta.isChecked()
    assert "unreachable" in home.message.text()
    room = dlg.screen().availableGeometry().height()
    assert room == 800  # the offscreen screen: the groups (taller than it leaves) scroll
    body = dlg.groups_scroll.widget()
    assert body is not None
    qtbot.waitUntil(lambda: dlg.height() == dlg.sizeHint().height(), timeout=5_000)
    assert body.sizeHint().height() + 70 > room - FitScroll.TITLE_BAR  # this test has teeth
    assert dlg.height() + FitScroll.TITLE_BAR <= room, dlg.size()
    ok = dlg.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert ok.isVisible() and ok.mapTo(dlg, ok.rect().bottomLeft()).y() < dlg.height()
    assert dlg.groups_scroll.verticalScrollBar().isVisible()
    dlg.close()
