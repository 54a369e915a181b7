"""The GUI thread keeps ticking while the model streams fast or answers slowly.

Only gross stalls fail here (> 500 ms between 5 ms ticks); bench/bench_ui.py prints the
figures against the 50 ms target.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.bench_ui import StallMeter, seed
from nocturne_desktop.settings import Settings
from tests.core.sleepkit import cooperative, pass_responder
from tests.fakeserver import FakeLLM, Reply

GROSS_STALL_MS = 500
"""Gross means the window visibly froze. This guard caught a real bug: a backtracking regex in
the encoder stalled the GUI for ~2 s after a long reply (measured gaps are now ~15 ms)."""


def test_fast_token_stream_keeps_the_event_loop_running(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings
) -> None:
    # Within the client's reply cap for the chat's 512 max_tokens (16,384 characters): the
    # scripted server ignores max_tokens, and a longer reply is now cut at the cap.
    text = " ".join(f"tok{i}" for i in range(1800))
    assert len(text) < 512 * 32

    def respond(req: Any) -> Reply:
        # 1,800 tokens at ~5,000 a second: a fast stream that still lasts long enough for the
        # meter's 5 ms ticks to be counted (the shorter reply alone could end in ~50 ms)
        return (Reply.json({"facts": []}) if "NEW TURNS:" in req.last_user
                else Reply.text(text, token_delay=0.0002))

    fake_llm.respond_with(respond)
    win = make_window(server_settings)
    qtbot.wait(100)  # the first paint is start-up, not a stall
    meter = StallMeter()
    meter.start()
    win.session.send("go")
    qtbot.waitUntil(lambda: not win.session.busy, timeout=30_000)
    meter.stop()
    win.session.wait_threads()
    assert text in win.chat.text()
    assert len(meter.gaps) > 10
    assert meter.longest_ms < GROSS_STALL_MS, f"GUI stalled {meter.longest_ms:.0f} ms"


def test_sleep_against_a_slow_model_keeps_the_event_loop_running(
    qtbot: Any, make_window: Any, fake_llm: FakeLLM, server_settings: Settings, db_path: Path
) -> None:
    slow = {task: (lambda f: (lambda p: Reply.json(f(p), delay=0.3)))(fn)
            for task, fn in cooperative().items()}
    fake_llm.respond_with(pass_responder(slow))
    seed(db_path, 60)
    win = make_window(server_settings)
    qtbot.wait(100)
    meter = StallMeter()
    meter.start()
    win.session.start_sleep()
    qtbot.waitUntil(lambda: not win.session.busy, timeout=60_000)
    meter.stop()
    win.session.wait_threads()
    assert win.session.store.sleeps()[-1].status == "done"
    # the model waited ≥ 0.3 s per call; the GUI ticked all along
    assert len(meter.gaps) > 50
    assert meter.longest_ms < GROSS_STALL_MS, f"GUI stalled {meter.longest_ms:.0f} ms"
