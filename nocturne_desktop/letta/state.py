"""What a memory folder knows of its link to a Letta agent, kept in the store's link state.

The server URL, the agent, where its key is read from (never the key), and for each block the
Letta block's id and limit and its lines as the link last wrote or read them, each with the fact
it is. Plus when the last pull and push happened, the last error, and the blocks found over
their limit. JSON under the link name :data:`LINK`; written in the same transaction as a pull's
version, so what was read and what was recorded never part.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from nocturne_desktop.core.errors import InvalidInput
from nocturne_desktop.core.store import Store
from nocturne_desktop.letta.lines import Synced

LINK = "letta"
STATE_FORMAT = 1


@dataclass
class BlockState:
    """One block of the agent as the link last saw it."""

    id: str | None = None
    limit: int = 0
    lines: Synced = field(default_factory=list)


@dataclass
class LinkState:
    url: str
    agent: str
    key_file: str | None = None
    linked_at: float = 0.0
    blocks: dict[str, BlockState] = field(default_factory=dict)
    last_pull: float | None = None
    last_push: float | None = None
    last_sync: float | None = None
    """When a sync last went through (a pull and a push, also when neither had anything to do)."""
    last_error: str | None = None
    """The last sync's failure in one sentence (None: the last sync went through)."""
    error_at: float | None = None
    over_limit: dict[str, str] = field(default_factory=dict)
    """Blocks that were not written because they exceed their limit: label → the sentence."""

    def block(self, label: str) -> BlockState:
        return self.blocks.setdefault(label, BlockState())

    def to_json(self) -> str:
        data = asdict(self)
        data["format"] = STATE_FORMAT
        return json.dumps(data, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> LinkState:
        try:
            data: Any = json.loads(text)
            if not isinstance(data, dict) or data.pop("format", None) != STATE_FORMAT:
                raise ValueError("not a link state this version writes")
            blocks = {str(k): BlockState(v.get("id"), int(v.get("limit") or 0),
                                         [(None if i is None else str(i), str(t))
                                          for i, t in v.get("lines") or []])
                      for k, v in (data.pop("blocks", None) or {}).items()}
            return cls(blocks=blocks, **data)
        except (TypeError, ValueError, AttributeError) as exc:
            raise InvalidInput(f"this memory's link to Letta is unreadable ({exc}); link it "
                               "again with `nocturne letta link`") from None


def load(store: Store) -> LinkState | None:
    text = store.get_link_state(LINK)
    return None if text is None else LinkState.from_json(text)


def save(store: Store, state: LinkState) -> None:
    store.set_link_state(LINK, state.to_json())
