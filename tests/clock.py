"""A fake clock for the code that takes one (``Store(clock=...)``, the auto-sleep timer): each
reading moves it ``step`` seconds on, so every timestamp is distinct and in order; with
``step=0`` it reads ``now`` until the test moves it (``clock.now += ...``)."""

from __future__ import annotations

T0 = 1_700_000_000.0


class Clock:
    def __init__(self, start: float = T0, step: float = 1.0) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now
