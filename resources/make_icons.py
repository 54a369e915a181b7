"""Render resources/nocturne.svg to the PNG sizes the app and the desktop want.

    python resources/make_icons.py

Writes resources/icons/nocturne-<size>.png (16…512, for the .desktop install and the OS
packages), resources/nocturne.ico (the Windows executable's icon) and copies the SVG and the PNGs the window uses into nocturne_desktop/resources/.
Uses QtSvg from PySide6-Essentials; runs offscreen, no display needed.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
APP_SIZES = (16, 32, 48, 64, 128, 256, 512)
"""The sizes shipped as package data (QIcon picks the nearest for each use)."""

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "nocturne_desktop" / "resources"


def main() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    svg = HERE / "nocturne.svg"
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        print(f"cannot read {svg}", file=sys.stderr)
        return 1
    out = HERE / "icons"
    out.mkdir(exist_ok=True)
    for size in SIZES:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        renderer.render(painter)
        painter.end()
        target = out / f"nocturne-{size}.png"
        if not image.save(str(target)):
            print(f"cannot write {target}", file=sys.stderr)
            return 1
        if size in APP_SIZES:
            shutil.copyfile(target, PACKAGE / target.name)
    shutil.copyfile(svg, PACKAGE / "nocturne.svg")
    # Windows wants an .ico for the executable (Qt's ICO writer stores one image; 256 px)
    ico = QImage(str(out / "nocturne-256.png"))
    if not ico.save(str(HERE / "nocturne.ico"), "ICO"):
        print("cannot write nocturne.ico (no ICO image plugin?)", file=sys.stderr)
        return 1
    print(f"wrote {len(SIZES)} PNGs to {out} and {len(APP_SIZES)} + the SVG to {PACKAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
