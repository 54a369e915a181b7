"""scripts/xvfb_smoke.py: the blank-screenshot check, and the skip when it cannot run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from PySide6.QtCore import QRect
from PySide6.QtGui import QColor, QFont, QImage, QPainter

ROOT = Path(__file__).resolve().parents[1]


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nocturne_xvfb_smoke", ROOT / "scripts" / "xvfb_smoke.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TREE, CHAT = [300, 40, 300, 200], [0, 40, 280, 200]


def picture(path: Path, *, text_in: tuple[list[int], ...]) -> Path:
    image = QImage(640, 300, QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setFont(QFont("sans", 10))
    for x, y, w, h in text_in:
        painter.drawRect(QRect(x, y, w - 1, h - 1))
        for row in range(y + 16, y + h - 8, 18):
            painter.drawText(x + 6, row, "Maya keeps a bearded dragon called Saffron.")
    painter.end()
    assert image.save(str(path), "PNG")
    return path


def record(**kw: Any) -> dict[str, Any]:
    return {"platform": "xcb", "saved": True, "tree": TREE, "chat": CHAT, **kw}


def test_a_painted_window_passes(qapp: Any, tmp_path: Path) -> None:
    smoke = load_script()
    png = picture(tmp_path / "ok.png", text_in=(TREE, CHAT))
    assert smoke.check_screenshot(png, record()) == []


def test_a_blank_region_or_another_platform_fails(qapp: Any, tmp_path: Path) -> None:
    smoke = load_script()
    png = picture(tmp_path / "half.png", text_in=(TREE,))  # the chat pane never painted
    problems = smoke.check_screenshot(png, record(platform="offscreen"))
    assert problems[0] == "the app ran on 'offscreen', not xcb"
    assert len(problems) == 2 and problems[1].startswith("the chat region looks blank")
    blank = picture(tmp_path / "blank.png", text_in=())
    assert [p.split(" (")[0] for p in smoke.check_screenshot(blank, record())] == [
        "the tree region looks blank", "the chat region looks blank"]
    assert smoke.check_screenshot(blank, record(tree=None, saved=False)) == [
        "no screenshot was saved"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Xvfb is Linux only")
def test_without_xvfb_and_without_root_it_is_skipped_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    smoke = load_script()
    monkeypatch.setattr(smoke.shutil, "which", lambda name, path=None: None)
    monkeypatch.setattr(smoke, "missing_xcb_libraries", lambda: ["libxcb-icccm.so.4"])
    monkeypatch.setattr(smoke.os, "geteuid", lambda: 1000)
    monkeypatch.delenv("XVFB_SMOKE_REQUIRED", raising=False)
    assert smoke.run("source", None) == 0
    out = capsys.readouterr().out
    assert out.startswith("xvfb-smoke (source): skipped: Xvfb and the xcb libraries "
                          "libxcb-icccm.so.4 not installed, and not running as root")
    assert "sudo apt-get install xvfb libxcb-cursor0" in out
    monkeypatch.setenv("XVFB_SMOKE_REQUIRED", "1")
    assert smoke.run("source", None) == 1
