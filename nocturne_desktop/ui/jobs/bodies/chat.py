"""The bodies of a chat turn: the user's turn recorded and one reply streamed (with the typed
items it yields on the way), and, as a job of its own, the encoder over the new turns, so the
next message can be sent while memory reads the last one. No Qt."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Generator, Iterator

from nocturne_desktop.core.cancel import Cancelled, CancelToken

# Imported here, on the GUI thread at start-up, not lazily inside a job: an import holds the
# GIL for long stretches, which would stall the GUI the first time a job starts.
from nocturne_desktop.core.chat.agent import ChatAgent
from nocturne_desktop.core.chat.encoder import Encoder, EncodeResult
from nocturne_desktop.core.ports import ModelCancelled, ModelError, ModelTruncated, context_window_of
from nocturne_desktop.ui.jobs.body import BodyContext
from nocturne_desktop.ui.jobs.errors import describe_error


@dataclasses.dataclass(frozen=True)
class EncodeSummary:
    """What the encoder did after a reply, flattened for the chat pane."""

    remembered: tuple[tuple[str, str, str], ...]
    """(id, block, text) of each accepted fact."""
    refused: tuple[tuple[str, str], ...]
    """(proposed text, reason) of each refused fact."""
    error: str | None = None
    private: bool = False
    """Memory was off for this exchange: nothing of it was saved or remembered."""
    stopped: bool = False
    """Remembering was stopped (Esc, or the window closed) before it ended: the turns stay
    after the encoder's cursor and are read by the next run."""
    key: int = 0
    """Which "remembering…" mark of the chat pane this answers (set by the session)."""


@dataclasses.dataclass(frozen=True)
class ChatAccepted:
    turn: int
    """The user's turn is committed (number ``turn``), before the model is called: the input box
    may let go of the text now. A message the store refuses never gets here (the job fails)."""


@dataclasses.dataclass(frozen=True)
class ChatTokens:
    text: str
    """Reply text since the previous item (coalesced to at most one item per ~16 ms)."""


@dataclasses.dataclass(frozen=True)
class ChatReplied:
    text: str
    stopped: bool
    """The reply ended early (Stop, or cut at the size cap): ``text`` is the partial reply."""
    cut: str | None = None
    """Why the reply was cut (the client's reply-size cap), for the person; ``None`` otherwise."""
    through: int | None = None
    """The last turn this exchange recorded (what the encoder reads up to); None: none."""


ChatItem = ChatAccepted | ChatTokens | ChatReplied

COALESCE_S = 0.016


class ReplyStop:
    """Esc during a chat turn: stops the reply only, so the encoder still reads what the person
    said. Separate from the job's cancel token (which stops everything, the encoder included);
    cancelling the job also stops the reply. :meth:`request` is safe from any thread."""

    def __init__(self) -> None:
        self.token = CancelToken()
        self._lock = threading.Lock()
        self._replying = True

    def request(self) -> bool:
        """Stop the reply; ``False`` once the reply is over (then cancel the job instead)."""
        with self._lock:
            if not self._replying:
                return False
            self.token.cancel()
            return True

    def reply_over(self) -> None:
        with self._lock:
            self._replying = False


def _summarise_encode(result: EncodeResult) -> EncodeSummary:
    remembered = tuple((f.id, f.block, f.text) for f in result.accepted)
    refused = []
    for item, reason in result.rejected:
        text = item.get("text") if isinstance(item, dict) else None
        refused.append((str(text if text is not None else item), str(reason)))
    return EncodeSummary(remembered, tuple(refused), result.error)


def chat_turn(ctx: BodyContext, user_text: str, stop: ReplyStop | None = None, *,
              remember: bool = True, again: bool = False) -> Generator[ChatItem, None, None]:
    """Records the user's turn (:class:`ChatAccepted`) and streams one reply; the encoder runs
    apart (:func:`remember_turns`), up to :attr:`ChatReplied.through`.

    ``remember=False`` (memory off, a private chat): the model still reads memory to answer,
    but neither turn is recorded and no recall is counted (the encoder's cursor never sees the
    exchange); :class:`ChatAccepted` carries turn 0.
    ``again=True`` regenerates the reply to the last message (``user_text`` unused; see
    :meth:`ChatAgent.stream_again`): no :class:`ChatAccepted`, the rest as for a new message.

    ``stop`` (Esc) ends the reply early; a reply cut at the client's size cap ends too. Either
    way the partial reply is kept and reported as stopped (with the cut's reason); what the
    person said is still there for the encoder. The job's token (``ctx.cancel``) stops it too.
    A message the store refuses (too long, a NUL) raises before any model call.
    """
    stop = stop if stop is not None else ReplyStop()
    unlink = ctx.cancel.on_cancel(stop.token.cancel)
    try:
        parts: list[str] = []
        pending: list[str] = []
        last = 0.0
        stopped = False
        cut: str | None = None
        try:
            # memory sized from the model's window (asked here, off the GUI thread; None: 6,000)
            agent = ChatAgent(ctx.store, ctx.model, context_tokens=context_window_of(ctx.model))
            reply = agent.stream_again(cancel=stop.token) if again else \
                agent.stream_reply(user_text, cancel=stop.token, record=remember)
            stream: Iterator[str] = reply
            try:
                if reply.user_turn is not None:
                    yield ChatAccepted(reply.user_turn.n)
                elif not remember:
                    yield ChatAccepted(0)
                for piece in stream:
                    parts.append(piece)
                    pending.append(piece)
                    now = time.monotonic()
                    if now - last >= COALESCE_S:
                        yield ChatTokens("".join(pending))
                        pending.clear()
                        last = now
                    if stop.token.cancelled:
                        stopped = True
                        break
            except (ModelCancelled, Cancelled):
                stopped = True
            except ModelTruncated as exc:  # cut at the reply-size cap: the part before is kept
                stopped = True
                cut = describe_error(exc)
            finally:
                close = getattr(stream, "close", None)
                if callable(close):
                    close()  # records the assistant turn (what was shown) before ChatReplied
        finally:
            stop.reply_over()
        if pending:
            yield ChatTokens("".join(pending))
        stopped = stopped or stop.token.cancelled
        recorded = reply.assistant_turn or reply.user_turn
        yield ChatReplied("".join(parts), stopped, cut,
                          through=recorded.n if recorded is not None else None)
    finally:
        unlink()


def remember_turns(ctx: BodyContext, through: int | None) -> EncodeSummary:
    """The encoder over the turns after its cursor, up to turn ``through`` (one exchange; the
    turns of a message sent meanwhile wait for their own run). A model failure is reported in
    the summary (the cursor stays: the turns are read again next time); a cancel raises."""
    try:
        result = Encoder(ctx.store, ctx.model).encode_new_turns(cancel=ctx.cancel, through=through)
    except ModelError as exc:
        if isinstance(exc, ModelCancelled):
            raise
        return EncodeSummary((), (), describe_error(exc))
    return _summarise_encode(result)
