"""Render the window over a memory that lives in a Letta agent (light and dark palettes): the
timeline with a version *changed in Letta* selected, the diff of that version (an edit, a new
line and a removed one, as the agent wrote them into its ``human`` block), and Settings →
Memory lives in, with the server's agents listed.

Real, not staged: the Letta server of ``make letta`` is started on a free loopback port with a
temporary HOME, an agent is made there, the seeded memory is linked to it through the window,
the agent's block is rewritten over Letta's REST API (as the agent's own memory tools do) and
the window's sync pulls it. Offscreen, no model server.
Writes ``docs/screenshots/{letta-timeline,letta-diff,letta-settings}-{light,dark}.png``.

Run: ``QT_QPA_PLATFORM=offscreen python scripts/screenshot_letta.py [out_dir]`` (after
``make letta``).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import screenshots as shots  # noqa: E402  (this folder; imports Qt in the right order)

from nocturne_desktop.letta.client import LettaClient  # noqa: E402
from nocturne_desktop.letta.localserver import LocalLettaServer, find_letta  # noqa: E402
from nocturne_desktop.letta.sync import PULL_LABEL  # noqa: E402
from nocturne_desktop.settings import ApiKey  # noqa: E402

SERVER: LocalLettaServer | None = None

EDITED = {"The user works best in the morning.":
          "The user works best in the early morning, before nine."}
REMOVED = {"The user drinks green tea, never coffee."}
ADDED = ["The user's sister Ana lives in Porto."]
"""What the agent changes in its human block: an edit, a removal and a new line."""


def rewritten(value: str) -> str:
    lines = [EDITED.get(line, line) for line in value.splitlines() if line not in REMOVED]
    return "\n".join(lines + ADDED)


def wait_synced(win: Any) -> Any:
    got: list[Any] = []
    win.letta.synced.connect(got.append)
    shots.spin(lambda: bool(got) and not win.letta.running, timeout_s=120)
    if not got:
        raise SystemExit("the window's sync with Letta did not end")
    return got[-1]


def render(out: Path, work: Path, db: Path, theme: str) -> Any:
    assert SERVER is not None
    win = shots.build_window(db, work, shots.ScriptedModel())
    win.chat.input.clear()
    # a sleep first (the rules only), so the change in Letta comes after a history of its own
    win.start_rules_sleep()
    shots.spin(lambda: not win.session.busy, timeout_s=120)
    win.session.wait_threads()
    with LettaClient(SERVER.url) as letta:
        agent = letta.create_agent(f"nocturne-{theme}")
        # link through the window: the agent's blocks are empty, so this memory is written there
        win.letta.link(SERVER.url, agent.id, ApiKey())
        outcome = wait_synced(win)
        if outcome.error is not None:
            raise SystemExit(f"the link failed: {outcome.error}")
        # the agent rewrites its human block in Letta; the window's next sync pulls it
        letta.set_block(agent.id, "human", rewritten(letta.block(agent.id, "human").value))
        win.letta.sync_now()
        outcome = wait_synced(win)
        version = outcome.report.pull.version if outcome.report is not None else None
        if version is None or version.label != PULL_LABEL:
            raise SystemExit(f"no version changed in Letta: {outcome}")
        shots.spin(lambda: any(v.seq == version.seq for v in win.timeline.model.all_versions()))
        win.tabs.setCurrentWidget(win.timeline)
        win.timeline.select_version(version.seq)
        shots.spin(lambda: win.memory.viewing is not None)
        shots.shoot(win, out, f"letta-timeline-{theme}")
        win.back_to_live()
        win.diff.select_pair(version.seq - 1, version.seq)
        win.tabs.setCurrentWidget(win.diff)
        shots.spin(lambda: win.diff.diff is not None)
        shots.shoot(win, out, f"letta-diff-{theme}")
        # Settings → Memory lives in → Letta agent…: the server's agents listed (in a job)
        from PySide6.QtCore import QPoint

        from nocturne_desktop.ui.settings_dialog import SettingsDialog

        dlg = SettingsDialog(win.session.settings, win.session.api_key, {}, win)
        home = dlg.memory_home
        assert home is not None
        dlg.show()
        chooser = home.open_agent_dialog()
        chooser.list_agents()
        shots.spin(lambda: chooser.list_button.isEnabled()
                   and "on this server" in chooser.message.text())
        chooser.select_agent(agent.id)
        chooser.adjustSize()
        chooser.move(dlg.mapToGlobal(QPoint((dlg.width() - chooser.width()) // 2,
                                            dlg.height() - chooser.height() - 70)))
        shots.shoot_over(dlg, out, f"letta-settings-{theme}", chooser)
        chooser.reject()
        dlg.close()
        win.letta.close()
        letta.delete_agent(agent.id)
    return win


def main(argv: Sequence[str]) -> int:
    global SERVER
    exe = find_letta()
    if exe is None:
        print("the Letta server is not installed: run `make letta`", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="nocturne-letta-") as home:
        SERVER = LocalLettaServer(Path(home), letta=exe)
        with SERVER:
            return shots.each_palette(argv, render)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
