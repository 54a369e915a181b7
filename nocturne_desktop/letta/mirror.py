"""``nocturne verify --letta URL``: the verifier's live state in a Letta agent's blocks.

:class:`LettaMirror` is the verifier's :class:`~nocturne_desktop.core.checks.verify.LiveMirror`:
it links the verifier's new memory to an agent (one it makes for the run, unless given one),
follows every commit with a sync, and compares the agent's blocks with the live facts when asked.
The agent it made is deleted at the end unless ``keep`` is set.
"""

from __future__ import annotations

import statistics
import time
import uuid
from typing import Any

from nocturne_desktop.core.store import Store
from nocturne_desktop.letta.client import LettaClient, LettaError, model_settings
from nocturne_desktop.letta.lines import parse
from nocturne_desktop.letta.sync import LABELS, LettaSync, SyncReport, link, rendered


class LettaMirror:
    name = "the Letta agent"

    def __init__(self, client: LettaClient, *, agent_id: str | None = None,
                 base_url: str | None = None, model: str = "", keep: bool = False) -> None:
        self.client, self.agent_id, self.keep = client, agent_id, keep
        self._made = agent_id is None
        self._base_url, self._model = base_url, model
        self.sync_link: LettaSync | None = None
        self._detach: Any = None
        self.seconds: list[float] = []
        self.failures: list[str] = []

    def attach(self, store: Store) -> str:
        if self.agent_id is None:
            llm, embedding = model_settings(self._base_url, self._model)
            agent = self.client.create_agent(f"nocturne-verify-{uuid.uuid4().hex[:8]}",
                                             llm=llm, embedding=embedding)
            self.agent_id = agent.id
        self.sync_link, first = link(store, self.client.url, self.agent_id, client=self.client)
        self.sync_link._own = False
        self._detach = self.sync_link.attach(on_commit=self._after_commit)
        return (f"live state in Letta agent {self.agent_id} on {self.client.url} "
                f"({first.summary()})")

    def _after_commit(self) -> None:
        assert self.sync_link is not None
        t0 = time.perf_counter()
        done = self.sync_link.sync_quietly()
        if isinstance(done, SyncReport):
            self.seconds.append(time.perf_counter() - t0)
        else:
            self.failures.append(str(done))

    def sync(self) -> str:
        assert self.sync_link is not None
        try:
            return self.sync_link.sync().summary()
        except LettaError as exc:
            self.failures.append(str(exc))
            return f"failed: {exc}"

    def holds_live_state(self) -> tuple[bool, str]:
        assert self.sync_link is not None and self.agent_id is not None
        try:
            blocks = {b.label: parse(b.value) for b in self.client.blocks(self.agent_id)}
        except LettaError as exc:
            return False, str(exc)
        want = rendered(self.sync_link.store.active_facts())
        wrong = [label for label in LABELS
                 if blocks.get(label, []) != [t for _, t in want[label]]]
        lines = sum(len(v) for v in want.values())
        if wrong:
            return False, (f"the agent's {', '.join(wrong)} block(s) differ from the live facts "
                           f"({len(self.failures)} sync failure(s): {'; '.join(self.failures[-2:])})")
        return True, (f"{lines} active facts = the agent's {lines} block lines; "
                      f"{len(self.seconds)} commits synced")

    def detach(self) -> dict[str, Any]:
        if self._detach is not None:
            self._detach()
            self._detach = None
        if self._made and not self.keep and self.agent_id is not None:
            try:
                self.client.delete_agent(self.agent_id)
            except LettaError as exc:
                self.failures.append(f"deleting the agent: {exc}")
        ms = [s * 1000 for s in self.seconds]
        return {"agent": self.agent_id, "commitsSynced": len(ms),
                "syncMsMedian": round(statistics.median(ms), 1) if ms else None,
                "syncMsMax": round(max(ms), 1) if ms else None, "failures": self.failures}
