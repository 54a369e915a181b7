""""How much would I still know?" in the Wake tab: a benchmark file's questions put to the open
memory in a read job, the same figures as ``nocturne still-know``, bad files told plainly."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QFileDialog

from bench import bench_memory as bm
from nocturne_desktop import cli, paths
from nocturne_desktop.core.checks import recall as knowhow
from nocturne_desktop.core.store import Store
from nocturne_desktop.core.types import FactDraft
from nocturne_desktop.settings import Settings
from nocturne_desktop.ui.jobs.bodies import checks as check_bodies


def two_people(tmp_path: Path) -> Path:
    """The project's benchmark cut to its first two conversations, one question with markup."""
    raw = json.loads(bm.DATA.read_text(encoding="utf-8"))
    raw["conversations"] = raw["conversations"][:2]
    raw["conversations"][1]["questions"][0]["q"] = "<b>Where</b> did Sam <i>go</i>?"
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


def remember_first_person(db_path: Path, bench_file: Path) -> None:
    """The first conversation's facts in memory, the second's not."""
    convs = bm.load_bench(bench_file)
    with Store(db_path) as store:
        for s in convs[0].sessions:
            for t in s.turns:
                for text, cat in t.facts:
                    store.append("scratch", FactDraft(text, cat))


def cli_lines(db_path: Path, bench_file: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    assert paths.db_path(str(db_path.parent)) == db_path
    assert cli.main(["--data-dir", str(db_path.parent), "still-know", str(bench_file),
                     "--missed"]) == 0
    return capsys.readouterr().out.splitlines()


def run(qtbot: Any, win: Any, path: Path | str) -> Any:
    box = win.wake.still_know
    box.run_file(path)
    qtbot.waitUntil(lambda: not box.running, timeout=20_000)
    return box


def test_the_result_equals_the_cli_for_the_same_store_and_file(
    qtbot: Any, make_window: Any, db_path: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str]
) -> None:
    bench_file = two_people(tmp_path)
    remember_first_person(db_path, bench_file)
    win = make_window(Settings())
    win.tabs.setCurrentWidget(win.wake)
    box = run(qtbot, win, bench_file)
    assert box.error is None and box.report is not None
    expected = cli_lines(db_path, bench_file, capsys)
    assert box.summary.text().splitlines()[0] == expected[0]
    assert box.missed_lines() == expected[1:]
    assert box.missed.isVisible() and box.missed_lines()
    assert box.missed_title.text().startswith(f"Missed ({len(expected) - 1})")
    # per conversation: the first person is known, the second is not
    (c1, k1, n1), (c2, k2, n2) = box.report.by_conversation()
    assert k1 / n1 >= 0.85 and k2 < k1
    assert box.conversations.isVisible()
    assert box.conversations.text() == (f"Per conversation: {c1}: {k1} of {n1} · "
                                        f"{c2}: {k2} of {n2}")
    # file text is plain text: the markup in a question is shown as written
    assert any("<b>Where</b> did Sam <i>go</i>?" in line for line in box.missed_lines())
    for label in (box.summary, box.conversations, box.missed_title):
        assert label.textFormat() == Qt.TextFormat.PlainText


def test_the_button_opens_a_file_dialog_and_runs_the_chosen_file(
    qtbot: Any, make_window: Any, db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench_file = two_people(tmp_path)
    win = make_window(Settings())
    asked: list[Any] = []

    def pick(*args: Any) -> tuple[str, str]:
        asked.append(args)
        return str(bench_file), ""

    monkeypatch.setattr(QFileDialog, "getOpenFileName", pick)
    box = win.wake.still_know
    qtbot.mouseClick(box.button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: box.report is not None, timeout=20_000)
    assert asked and box.report.known == 0  # an empty memory knows nothing
    assert box.summary.text().startswith(f"0 of {box.report.asked} questions (0 %)")
    # cancelling the dialog runs nothing
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a: ("", ""))
    before = box.report
    box.button.click()
    assert box.report is before and not box.running


@pytest.mark.parametrize(("content", "says"), [
    ("not json at all", "is not a JSON file"),
    ('{"hello": 1}', "neither a nocturne-memory-bench/1 file nor a LoCoMo file"),
    ('[{"qa": [{"question": "Who?"}]}]', "holds no question with an answer"),
    (None, "is larger than 64 MB"),
])
def test_a_bad_file_shows_the_cores_message(
    qtbot: Any, make_window: Any, tmp_path: Path, content: str | None, says: str
) -> None:
    bad = tmp_path / "bad.json"
    if content is None:  # huge: a sparse file over the limit, refused unread
        with bad.open("wb") as f:
            f.truncate(knowhow.MAX_FILE_BYTES + 1)
    else:
        bad.write_text(content, encoding="utf-8")
    win = make_window(Settings())
    box = run(qtbot, win, bad)
    assert box.report is None and box.error is not None
    assert says in box.error and box.summary.text() == box.error
    assert not box.missed.isVisible()
    # and a good file after it works
    box = run(qtbot, win, two_people(tmp_path))
    assert box.error is None and box.report is not None


def test_a_missing_file_is_told_not_raised(qtbot: Any, make_window: Any, tmp_path: Path) -> None:
    box = run(qtbot, make_window(Settings()), tmp_path / "nowhere.json")
    assert box.error is not None and "cannot read nowhere.json" in box.error


def test_the_questions_are_put_on_the_job_thread_and_the_window_stays_live(
    qtbot: Any, make_window: Any, db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench_file = two_people(tmp_path)
    remember_first_person(db_path, bench_file)
    gate = threading.Event()
    seen: list[int] = []
    real = check_bodies.still_know

    def slow(store: Store, questions: Any, **kw: Any) -> Any:
        seen.append(threading.get_ident())
        gate.wait(10)  # a slow memory: the GUI thread must not wait for it
        return real(store, questions, **kw)

    monkeypatch.setattr(check_bodies, "still_know", slow)
    win = make_window(Settings())
    box = win.wake.still_know
    ticks: list[int] = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start(10)
    try:
        box.run_file(bench_file)
        assert box.running and "Putting the questions of bench.json" in box.summary.text()
        qtbot.waitUntil(lambda: bool(seen), timeout=5_000)
        qtbot.waitUntil(lambda: len(ticks) >= 5, timeout=5_000)  # the event loop runs meanwhile
        assert box.running and box.report is None
    finally:
        gate.set()
        timer.stop()
    qtbot.waitUntil(lambda: not box.running, timeout=20_000)
    assert seen and threading.get_ident() not in seen
    assert box.report is not None and box.report.asked == len(knowhow.load_questions(bench_file))


def test_a_newer_file_supersedes_one_still_running(
    qtbot: Any, make_window: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench_file = two_people(tmp_path)
    gate = threading.Event()
    real = check_bodies.still_know
    calls: list[int] = []

    def slow_first(store: Store, questions: Any, **kw: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            gate.wait(10)
        return real(store, questions, **kw)

    monkeypatch.setattr(check_bodies, "still_know", slow_first)
    win = make_window(Settings())
    box = win.wake.still_know
    box.run_file(bench_file)
    qtbot.waitUntil(lambda: bool(calls), timeout=5_000)
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    box.run_file(bad)  # the first run is cancelled: its result must never replace this one
    qtbot.waitUntil(lambda: box.error is not None, timeout=5_000)
    gate.set()
    win.session.wait_threads()
    qtbot.wait(50)
    assert box.report is None and "is not a JSON file" in (box.error or "")
    assert len(calls) == 1  # the cancelled run stopped at its next step
