"""File → Export memory / Import a JSON export, as a person does it (S-EXP-1): pick a path in
the file dialog, wait for the message that says where and how many facts; a bad file or a
non-empty folder gets the core's sentence and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QFileDialog, QMessageBox

from nocturne_desktop import paths
from nocturne_desktop.core.store import Store, exchange
from nocturne_desktop.core.store.exchange import ImportRefused
from nocturne_desktop.core.types import FactDraft
from nocturne_desktop.ui import exportimport, windows
from tests.core.test_exchange import everything
from tests.ui.conftest import seed_store


@pytest.fixture
def seeded(db_path: Path) -> Path:
    """The seed, then a hand edit, a forget and a pin: several versions with history."""
    facts = seed_store(db_path)
    with Store(db_path) as s:
        s.snapshot("encoded")
        s.forget_now(facts[8].id)
        s.append("human", FactDraft("The user paints watercolours on Sundays.", "preferences"))
        s.snapshot("encoded")
    return db_path


def files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def wait_notice(qtbot: Any, win: Any) -> QMessageBox:
    qtbot.waitUntil(lambda: win.exchange.notice is not None and win.exchange.notice.isVisible(),
                    timeout=10_000)
    box = win.exchange.notice
    assert box is not None
    return box


def save_as(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        staticmethod(lambda *_a, **_k: (str(path), "")))


def pick_import(monkeypatch: pytest.MonkeyPatch, file: Path, folder: Path) -> None:
    monkeypatch.setattr(QFileDialog, "getOpenFileName",
                        staticmethod(lambda *_a, **_k: (str(file), "")))
    monkeypatch.setattr(exportimport.ImportFolderDialog, "ask",
                        classmethod(lambda *_a, **_k: folder))


def export_said(qtbot: Any, win: Any) -> str:
    """The export's last word, in the status line (no box is put over it)."""
    qtbot.waitUntil(lambda: win.menus.export_json.isEnabled()
                    and not win.statusBar().currentMessage().startswith("Exporting"),
                    timeout=10_000)
    assert win.exchange.notice is None or not win.exchange.notice.isVisible()
    return str(win.statusBar().currentMessage())


def test_file_menu_holds_export_and_import(make_window: Any) -> None:
    win = make_window()
    file_menu = win.menuBar().actions()[0].menu()
    texts = [a.text() for a in file_menu.actions()]
    for action in (win.menus.export_json, win.menus.export_md, win.menus.import_json):
        assert action.text() in texts


def test_export_json_validates_and_reimports_with_every_version_equal(
        qtbot: Any, make_window: Any, seeded: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    win = make_window()
    target = tmp_path / "out" / "memory.json"
    target.parent.mkdir()
    save_as(monkeypatch, target)
    win.menus.export_json.trigger()
    assert not win.menus.import_json.isEnabled()  # one export or import at a time
    said = export_said(qtbot, win)
    assert win.menus.import_json.isEnabled() and win.menus.export_json.isEnabled()
    with Store(seeded) as live:
        facts = live.all_facts()
        before = everything(live)
    assert str(target) in said and f"Exported {len(facts)} facts" in said

    export = exchange.read_export(target)  # validates against the pydantic schema
    assert len(export.facts) == len(facts)
    fresh = tmp_path / "fresh" / "nocturne.db"
    exchange.import_file(target, fresh)
    with Store(fresh) as again:
        after = everything(again)
    assert len(before["versions"]) >= 3
    assert after == before


def test_export_markdown_is_readable_text_with_the_facts(
        qtbot: Any, make_window: Any, seeded: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    win = make_window()
    target = tmp_path / "memory.md"
    save_as(monkeypatch, target)
    win.menus.export_md.trigger()
    said = export_said(qtbot, win)
    assert "Markdown" in said and str(target) in said
    doc = QTextDocument()
    doc.setMarkdown(target.read_text(encoding="utf-8"))
    readable = doc.toPlainText()
    with Store(seeded) as live:
        facts = live.all_facts()
    assert any(not f.active for f in facts)
    for f in facts:
        assert f.text in readable
    assert "Forgotten" in readable


def test_export_to_a_missing_folder_says_so_and_writes_nothing(
        qtbot: Any, make_window: Any, seeded: Path, tmp_path: Path) -> None:
    win = make_window()
    target = tmp_path / "nowhere" / "memory.json"
    win.exchange.export_to(str(target))
    box = wait_notice(qtbot, win)
    assert box.icon() == QMessageBox.Icon.Warning
    assert "was not exported" in box.text() and str(target) in box.text()
    assert not target.parent.exists()


def test_import_into_a_new_folder_then_open_it(
        qtbot: Any, make_window: Any, seeded: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "backup.json"
    with Store(seeded) as live:
        exchange.write_export(live, file)
        before = everything(live)
    folder = tmp_path / "moved"
    folder.mkdir()
    win = make_window()
    pick_import(monkeypatch, file, folder)
    win.menus.import_json.trigger()
    box = wait_notice(qtbot, win)
    assert box.icon() == QMessageBox.Icon.Information
    assert f"Imported {len(before['facts'])} facts" in box.text() and str(folder) in box.text()
    with Store(paths.db_path(folder)) as again:
        assert everything(again) == before
    box.button(QMessageBox.StandardButton.Open).click()
    (other,) = [w for w in windows.open_windows() if w is not win]
    try:  # a window of this process on the imported memory, titled by its folder
        assert other.session.db_path == paths.db_path(folder) and other.isVisible()
        assert other.windowTitle() == "Nocturne — moved"
        assert other.session.store.active_count() == win.session.store.active_count()
        assert win.exchange.open_memory_folder(folder) is other  # open already: to the front
    finally:
        other.close()
    assert windows.open_windows() == [win]


@pytest.mark.parametrize("content", [
    b"{not json",
    json.dumps({"format": "nocturne-memory", "exportVersion": 999}).encode(),
    b"[" * 5000 + b"]" * 5000,
    "a foreign file \u00e9".encode("latin-1"),
])
def test_a_bad_file_shows_the_core_message_and_writes_nothing(
        qtbot: Any, make_window: Any, seeded: Path, tmp_path: Path, content: bytes,
        monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "bad.json"
    file.write_bytes(content)
    with pytest.raises(ImportRefused) as refused:
        exchange.read_export(file)
    folder = tmp_path / "new"
    folder.mkdir()
    win = make_window()
    pick_import(monkeypatch, file, folder)
    win.menus.import_json.trigger()
    box = wait_notice(qtbot, win)
    assert box.icon() == QMessageBox.Icon.Warning
    assert str(refused.value) in box.text()
    assert files_in(folder) == []


def test_import_into_a_folder_holding_a_memory_is_refused(
        qtbot: Any, make_window: Any, seeded: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "backup.json"
    with Store(seeded) as live:
        exchange.write_export(live, file)
    other = tmp_path / "other"
    with Store(paths.db_path(other)) as s:
        s.append("human", FactDraft("The user has a cat called Miso.", "preferences"))
        held = everything(s)
    win = make_window()
    pick_import(monkeypatch, file, other)
    win.menus.import_json.trigger()
    box = wait_notice(qtbot, win)
    assert box.icon() == QMessageBox.Icon.Warning
    assert "already holds a memory" in box.text() and "nothing was written" in box.text()
    with Store(paths.db_path(other)) as s:
        assert everything(s) == held


def test_import_into_a_folder_with_other_files_or_the_open_memory_is_refused(
        qtbot: Any, make_window: Any, seeded: Path, tmp_path: Path) -> None:
    file = tmp_path / "backup.json"
    with Store(seeded) as live:
        exchange.write_export(live, file)
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "notes.txt").write_text("mine", encoding="utf-8")
    win = make_window()
    win.exchange.import_into(str(file), str(stray))
    box = wait_notice(qtbot, win)
    assert "is not empty" in box.text() and "nothing was written" in box.text()
    assert files_in(stray) == ["notes.txt"]
    box.close()
    win.exchange.import_into(str(file), str(seeded.parent))
    box = wait_notice(qtbot, win)
    assert "this window has open" in box.text()


def their_export(tmp_path: Path) -> Path:
    """Another machine's memory: one fact ours already holds, two new ones, one forgotten."""
    with Store(tmp_path / "theirs" / "n.db") as s:
        s.append("human", FactDraft("The user paints watercolours on Sundays.", "preferences"))
        s.append("human", FactDraft("The user plays the cello.", "preferences"))
        s.append("episodes", FactDraft("The user went to Porto last spring.", "event"))
        gone = s.append("scratch", FactDraft("The user had toast."))
        s.snapshot("encoded")
        s.forget_now(gone.id)
        file = tmp_path / "theirs.json"
        exchange.write_export(s, file)
    return file


def test_import_into_this_memory_offers_its_facts_into_scratch_and_ctrl_z_undoes_them(
        qtbot: Any, make_window: Any, seeded: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    file = their_export(tmp_path)
    win = make_window()
    s = win.session
    versions = s.store.versions()
    mine = sorted(f.text for f in s.store.active_facts())
    pick_import(monkeypatch, file, seeded.parent)  # this window's own, non-empty folder
    win.menus.import_json.trigger()
    ask = wait_notice(qtbot, win)
    assert ask is win.exchange.import_choice and ask.icon() == QMessageBox.Icon.Question
    assert "this window has open" in ask.text() and "scratch" in ask.text()
    assert s.store.versions() == versions  # nothing written before the person says so
    (into,) = [b for b in ask.buttons() if b.text() == "Import facts into scratch"]
    into.click()
    qtbot.waitUntil(lambda: win.exchange.notice is not ask and win.exchange.notice is not None
                    and win.exchange.notice.isVisible(), timeout=10_000)
    box = win.exchange.notice
    assert box.icon() == QMessageBox.Icon.Information
    assert "Imported 2 of the 3 active facts of theirs.json into scratch" in box.text()
    assert "skipped 1 duplicate" in box.text()
    assert "The user paints watercolours on Sundays." in box.text().split("Already in memory:")[1]
    added = [f for f in s.store.get_block("scratch")
             if f.text in ("The user plays the cello.", "The user went to Porto last spring.")]
    assert len(added) == 2
    assert len(s.store.versions()) == len(versions) + 1
    qtbot.waitUntil(lambda: {f.id for f in added} <= {f.id for f in win.memory.model.facts("scratch")},
                    timeout=5_000)  # in the tree
    qtbot.waitUntil(lambda: win.menus.undo_change.isEnabled(), timeout=5_000)
    win.menus.undo_change.trigger()  # Ctrl+Z: the whole import, one step
    assert sorted(f.text for f in s.store.active_facts()) == mine
    win.menus.redo.trigger()
    assert len(s.store.active_facts()) == len(mine) + 2


def test_file_menu_imports_facts_into_scratch_and_a_bad_file_writes_nothing(
        qtbot: Any, make_window: Any, seeded: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text('{"memories": ["a"]}', encoding="utf-8")
    win = make_window()
    file_menu = win.menuBar().actions()[0].menu()
    assert win.menus.import_scratch in file_menu.actions()
    with Store(seeded) as live:
        before = live.dump()
    monkeypatch.setattr(QFileDialog, "getOpenFileName",
                        staticmethod(lambda *_a, **_k: (str(bad), "")))
    win.menus.import_scratch.trigger()
    box = wait_notice(qtbot, win)
    assert box.icon() == QMessageBox.Icon.Warning
    assert box.text().startswith("Nothing was imported:")
    assert 'not a Nocturne memory export (no "format": "nocturne-memory")' in box.text()
    assert win.menus.import_scratch.isEnabled()
    with Store(seeded) as live:
        assert live.dump() == before
    box.close()

    good = their_export(tmp_path)
    monkeypatch.setattr(QFileDialog, "getOpenFileName",
                        staticmethod(lambda *_a, **_k: (str(good), "")))
    win.menus.import_scratch.trigger()
    qtbot.waitUntil(lambda: win.exchange.notice is not None and win.exchange.notice is not box
                    and win.exchange.notice.isVisible(), timeout=10_000)
    assert "Imported 2 of the 3" in win.exchange.notice.text()
    v = win.session.store.latest_version()
    assert v is not None and v.label == "import:2 facts from theirs.json"


def test_the_import_folder_takes_a_typed_new_folder_name(
        qtbot: Any, make_window: Any, seeded: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails on the old code: the folder picker (a directory chooser) refused a folder that
    did not exist yet, so a new folder had to be made elsewhere first."""
    file = tmp_path / "backup.json"
    with Store(seeded) as live:
        exchange.write_export(live, file)
        before = everything(live)
    win = make_window()
    typed: list[str] = []

    def exec_typing(dialog: exportimport.ImportFolderDialog) -> int:
        typed.append(dialog.path.text())  # what it suggested
        dialog.path.clear()
        qtbot.keyClicks(dialog.path, "Work memory")  # a name: beside the export, made anew
        assert dialog.where.text() == f"Into a new folder: {tmp_path / 'Work memory'}"
        dialog.ok.click()
        return dialog.result()

    monkeypatch.setattr(QFileDialog, "getOpenFileName",
                        staticmethod(lambda *_a, **_k: (str(file), "")))
    monkeypatch.setattr(exportimport.ImportFolderDialog, "exec", exec_typing)
    win.menus.import_json.trigger()
    box = wait_notice(qtbot, win)
    assert typed == [str(tmp_path / "backup memory")]  # a new folder beside the file
    assert box.icon() == QMessageBox.Icon.Information
    with Store(paths.db_path(tmp_path / "Work memory")) as again:
        assert everything(again) == before


def test_the_import_folder_dialog_says_why_it_refuses_and_stays_open(
        qtbot: Any, make_window: Any, seeded: Path, tmp_path: Path) -> None:
    win = make_window()
    busy = tmp_path / "papers"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine", encoding="utf-8")
    for folder, why in ((seeded.parent, "the memory this window has open"),
                        (busy, "is not empty")):
        dialog = exportimport.ImportFolderDialog(tmp_path / "x memory", win.session.db_path, win)
        qtbot.addWidget(dialog)
        dialog.show()
        dialog.path.setText(str(folder))
        assert dialog.where.text() == f"Into the existing folder {folder}"
        dialog.ok.click()
        assert dialog.isVisible() and why in dialog.problem.text()
        dialog.close()
    assert files_in(busy) == ["notes.txt"]


def test_a_refused_text_in_a_file_names_the_rule() -> None:
    from nocturne_desktop.ui.exportimport import not_imported

    secret = ImportRefused("in.md line 4: sensitive: it looks like a password (password); "
                           "nothing was imported", rule="sensitive")
    assert not_imported(secret) == ("Nothing was imported: the secrets rule refused a fact in it "
                                    "(in.md line 4: it looks like a password (password)).")
    assert not_imported(ImportRefused("in.json is not valid JSON")) == (
        "Nothing was imported: in.json is not valid JSON.")
