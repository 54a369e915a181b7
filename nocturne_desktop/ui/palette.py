"""Colours derived from the current palette, so light and dark themes both read well.

Nothing here hard-codes a background: status colours are a hue *blended into* the palette's
base colour, and text keeps the palette's text colour.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QWidget

HUES = {
    "kept": QColor(128, 128, 128),
    "changed": QColor(230, 160, 20),
    "forgotten": QColor(220, 60, 60),
    "superseded": QColor(200, 120, 40),
    "added": QColor(40, 170, 80),
    "rejected": QColor(170, 80, 200),
    "enforced": QColor(40, 130, 230),
    "error": QColor(220, 60, 60),
    "ok": QColor(40, 170, 80),
    "running": QColor(40, 130, 230),
}


def current() -> QPalette:
    app = QApplication.instance()
    return app.palette() if isinstance(app, QApplication) else QPalette()


def is_dark(pal: QPalette | None = None) -> bool:
    pal = pal or current()
    return pal.color(QPalette.ColorRole.Base).lightnessF() < 0.5


def blend(a: QColor, b: QColor, t: float) -> QColor:
    """``a`` moved a fraction ``t`` towards ``b``."""
    return QColor.fromRgbF(
        a.redF() + (b.redF() - a.redF()) * t,
        a.greenF() + (b.greenF() - a.greenF()) * t,
        a.blueF() + (b.blueF() - a.blueF()) * t,
    )


def tint(status: str, pal: QPalette | None = None, strength: float | None = None) -> QColor:
    """A row background for ``status``: its hue blended into the palette's base colour."""
    pal = pal or current()
    base = pal.color(QPalette.ColorRole.Base)
    if strength is None:
        strength = 0.30 if is_dark(pal) else 0.20
    return blend(base, HUES.get(status, HUES["kept"]), strength)


def accent(status: str, pal: QPalette | None = None) -> QColor:
    """A foreground colour for ``status`` that keeps contrast on the palette's base."""
    pal = pal or current()
    hue = QColor(HUES.get(status, HUES["kept"]))
    text = pal.color(QPalette.ColorRole.Text)
    # pull the hue a little towards the text colour: darker on light themes, lighter on dark
    return blend(hue, text, 0.25)


def muted(pal: QPalette | None = None) -> QColor:
    """Secondary text (ages, quiet lines): between text and base."""
    pal = pal or current()
    return blend(pal.color(QPalette.ColorRole.Text), pal.color(QPalette.ColorRole.Base), 0.45)


def set_tone(widget: QWidget, tone: str | None) -> None:
    """Colour ``widget``'s text with a status accent, or back to its parent's text colour."""
    pal = widget.palette()
    role = widget.foregroundRole()
    if tone is None:
        owner = widget.parentWidget()
        base = owner.palette() if owner is not None else current()
        pal.setColor(role, base.color(role))
    else:
        pal.setColor(role, accent(tone))
    widget.setPalette(pal)


def dark_palette() -> QPalette:
    """A dark palette (the screenshots' dark shots, and a fallback on platforms without one)."""
    p = QPalette()
    window = QColor(37, 38, 41)
    base = QColor(28, 29, 32)
    text = QColor(224, 226, 230)
    disabled = QColor(120, 122, 128)
    role = QPalette.ColorRole
    for r, c in (
        (role.Window, window), (role.WindowText, text), (role.Base, base),
        (role.AlternateBase, QColor(34, 35, 39)), (role.ToolTipBase, QColor(50, 52, 56)),
        (role.ToolTipText, text), (role.PlaceholderText, disabled), (role.Text, text),
        (role.Button, QColor(48, 50, 54)), (role.ButtonText, text), (role.BrightText, QColor(255, 90, 90)),
        (role.Light, QColor(70, 72, 78)), (role.Midlight, QColor(58, 60, 65)), (role.Mid, QColor(44, 46, 50)),
        (role.Dark, QColor(20, 20, 22)), (role.Shadow, QColor(0, 0, 0)),
        (role.Highlight, QColor(53, 116, 200)), (role.HighlightedText, QColor(255, 255, 255)),
        (role.Link, QColor(110, 170, 255)), (role.LinkVisited, QColor(170, 140, 255)),
    ):
        p.setColor(r, c)
    for r in (role.Text, role.WindowText, role.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, r, disabled)
    return p
