"""The screenshot scripts in scripts/ run against the current window and write every image.

They drive the real window through its own attributes (a dialog's list, a panel's buttons);
when a widget changes, a script that still reaches for the old one breaks only when someone
next refreshes the README's pictures. Each runs here, in its own process (each builds its own
QApplication), into a temporary folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p.name for p in (ROOT / "scripts").glob("screenshot*.py"))


def test_every_screenshot_script_is_covered() -> None:
    assert "screenshots.py" in SCRIPTS and len(SCRIPTS) >= 6


NEEDS_LETTA = {"screenshot_letta.py"}
"""Scripts that start the real Letta server (``make letta``): marked like its tests."""


@pytest.mark.slow
@pytest.mark.parametrize("script", [pytest.param(s, marks=pytest.mark.letta) if s in NEEDS_LETTA
                                    else s for s in SCRIPTS])
def test_screenshot_script_writes_its_images(script: str, tmp_path: Path) -> None:
    if script in NEEDS_LETTA:
        from tests.lettaserver import require_letta

        require_letta()  # skipped without it, a failure under make test
    out = tmp_path / "shots"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", NOCTURNE_CONFIG_DIR=str(tmp_path / "cfg"),
               PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / script), str(out)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    written = sorted(out.glob("*.png"))
    claimed = [line for line in proc.stdout.splitlines() if line.startswith("wrote ")]
    assert written and len(written) == len(claimed), (written, claimed)
    for png in written:
        head = png.read_bytes()[:8]
        assert head == b"\x89PNG\r\n\x1a\n", png
        assert png.stat().st_size > 2_000, png  # a painted window, not an empty grab
    # light and dark of every shot
    stems = {p.stem.rsplit("-", 1)[0] for p in written if p.stem.endswith(("-light", "-dark"))}
    for stem in stems:
        assert (out / f"{stem}-light.png").exists() and (out / f"{stem}-dark.png").exists(), stem
