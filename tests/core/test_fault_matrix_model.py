"""The fault matrix, model side (issue 13, item 8): a trickling server, huge replies, a flapping
server and unusable encoder replies, through the real client on a real socket into a real
SQLite store. The storage side is ``test_fault_matrix.py``; the same faults seen in the window
are ``tests/ui/test_chat_faults.py``.

Every scenario asserts the same things: ``integrity_check`` is ``ok``; no user turn typed
before the commit point is lost; memory holds only facts traceable to the transcript; a sleep
leaves the live state at a pass boundary with a clean re-audit; and the message a person sees
says what happened. At the end the module prints the matrix.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.chat.agent import ChatAgent, turn_stopped
from nocturne_desktop.core.chat.encoder import CURSOR_KEY, Encoder
from nocturne_desktop.core.checks.audit import reaudit, traceability
from nocturne_desktop.core.policy import RetentionPolicy
from nocturne_desktop.core.ports import (
    ModelBadReply,
    ModelError,
    ModelTimeout,
    ModelTruncated,
    ModelUnreachable,
)
from nocturne_desktop.core.sleep import run_sleep
from nocturne_desktop.core.store import Store
from nocturne_desktop.llm.client import CHARS_PER_TOKEN_CAP, OpenAIClient, Timeouts
from tests.core import matrixprint
from tests.core.sleepkit import cooperative, pass_responder, seed
from tests.fakeserver import FakeLLM, Reply, Request

pytestmark = pytest.mark.timeout(120)

FAST = Timeouts(connect=2.0, first_token=5.0, idle=5.0, total=30.0)
MATRIX: list[dict[str, Any]] = []


@pytest.fixture(scope="module", autouse=True)
def print_matrix(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    matrixprint.print_matrix(
        request, "model-side fault matrix (scenario | tried | survived | turns lost | corrupted)",
        MATRIX, 52)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "nocturne.db") as s:
        yield s


def make_client(server: FakeLLM, timeouts: Timeouts = FAST) -> OpenAIClient:
    return OpenAIClient(server.base_url, "fake-model", timeouts=timeouts)


def encoder_or(reply: Reply, facts: list[dict[str, Any]] | None = None) -> Any:
    """Chat requests get ``reply``; encoder requests (they carry NEW TURNS) get ``facts``."""

    def respond(req: Request) -> Reply:
        if "NEW TURNS:" in req.last_user:
            return Reply.json({"facts": facts or []})
        return reply

    return respond


def assert_sound(store: Store, typed: list[str], scenario: str) -> None:
    """The checks every scenario shares; the outcome goes into the printed matrix."""
    integrity = store.integrity_check()
    users = [t.text for t in store.turns() if t.role == "user"]
    lost = sum(1 for t in typed if t not in users)
    trace = traceability(store.active_facts(), users)
    sound = integrity == "ok" and users == typed and trace.traceable == trace.total
    MATRIX.append({"scenario": scenario, "tried": 1, "survived": int(sound), "lost": lost,
                   "corrupted": int(integrity != "ok")})
    assert integrity == "ok"
    assert users == typed, "a user turn typed before the commit point was lost"
    assert trace.traceable == trace.total, trace.problems


def request_id(ignore_stream: bool) -> str:
    return "one JSON body" if ignore_stream else "SSE"


def chat(agent: ChatAgent, text: str) -> tuple[str, ModelError | None]:
    """Stream a reply the way the window does; what was shown and the error, if any."""
    stream = agent.stream_reply(text)
    shown: list[str] = []
    try:
        for piece in stream:
            shown.append(piece)
    except ModelError as exc:
        return "".join(shown), exc
    return "".join(shown), None


# --- the commit point ----------------------------------------------------------------------------


def test_the_user_turn_is_committed_before_the_model_is_called(
    fake_llm: FakeLLM, store: Store
) -> None:
    seen: list[list[str]] = []

    def respond(req: Request) -> Reply:
        # Another connection, as another process would see the file.
        with sqlite3.connect(store.path) as other:
            seen.append([r[0] for r in other.execute("SELECT text FROM turns WHERE role='user'")])
        return Reply.text("hello")

    fake_llm.respond_with(respond)
    with make_client(fake_llm) as client:
        text, err = chat(ChatAgent(store, client), "my dragon is called Saffron")
    assert err is None and text == "hello"
    assert seen == [["my dragon is called Saffron"]]
    # the prompt carries the message once, last, whatever the history holds
    body = fake_llm.chat_requests()[0].body["messages"]
    assert [m["content"] for m in body if m["role"] == "user"] == ["my dragon is called Saffron"]
    assert_sound(store, ["my dragon is called Saffron"], "user turn committed before the model call")


# --- trickle -------------------------------------------------------------------------------------


def test_trickle_ends_at_the_deadline_and_loses_nothing(fake_llm: FakeLLM, store: Store) -> None:
    fake_llm.respond_with(encoder_or(Reply.stream_of(["slow "] * 500, token_delay=0.1)))
    timeouts = Timeouts(connect=2, first_token=5, idle=5, total=1.0)
    t0 = time.monotonic()
    with make_client(fake_llm, timeouts) as client:
        shown, err = chat(ChatAgent(store, client), "tell me everything")
    assert isinstance(err, ModelTimeout) and err.which == "deadline"
    assert "overall deadline" in str(err) and "1 s" in str(err)
    assert time.monotonic() - t0 < 5
    assert shown.startswith("slow slow")
    last = store.turns()[-1]
    assert last.role == "assistant" and last.text == shown and turn_stopped(store, last.n)
    assert_sound(store, ["tell me everything"], "trickle past the overall deadline")


# --- huge replies --------------------------------------------------------------------------------


@pytest.mark.parametrize("ignore_stream", [False, True], ids=["sse", "json-body"])
def test_a_50_mb_reply_is_cut_at_the_cap_kept_and_encoded(
    fake_llm: FakeLLM, store: Store, ignore_stream: bool
) -> None:
    fake_llm.respond_with(encoder_or(
        Reply.huge(50 * 1024 * 1024, ignore_stream=ignore_stream),
        [{"text": "The user wants a long answer.", "category": "context", "turn": 1}],
    ))
    with make_client(fake_llm) as client:
        agent = ChatAgent(store, client)
        t0 = time.monotonic()
        shown, err = chat(agent, "I want a long answer")
        took = time.monotonic() - t0
        assert isinstance(err, ModelTruncated) and "size cap" in str(err)
        result = Encoder(store, client).encode_new_turns()
    cap = agent.max_tokens * CHARS_PER_TOKEN_CAP  # type: ignore[operator]
    assert len(shown) == cap and took < 10
    last = store.turns()[-1]
    assert last.role == "assistant" and len(last.text) == cap and turn_stopped(store, last.n)
    assert result.error is None and [f.text for f in result.accepted] == [
        "The user wants a long answer."
    ]
    assert_sound(store, ["I want a long answer"], f"50 MB reply ({request_id(ignore_stream)})")


# --- a flapping server ---------------------------------------------------------------------------


def test_a_flapping_server_loses_no_turn_and_the_backlog_is_encoded_once_it_is_back(
    store: Store,
) -> None:
    facts_for = {
        "I live in Lisbon.": "The user lives in Lisbon.",
        "I keep a bearded dragon.": "The user keeps a bearded dragon.",
        "I work on Airflow.": "The user works on Airflow.",
        "I like green tea.": "The user likes green tea.",
    }

    def respond(req: Request) -> Reply:
        if "NEW TURNS:" in req.last_user:
            return Reply.json({"facts": [
                {"text": fact, "category": "context"}
                for said, fact in facts_for.items() if f"user: {said}" in req.last_user
            ]})
        return Reply.text("Noted.")

    up = FakeLLM().start()
    port = up.port
    up.respond_with(respond)
    client = OpenAIClient(up.base_url, "fake-model", timeouts=FAST)
    messages: list[str] = []
    try:
        agent = ChatAgent(store, client)
        encoder = Encoder(store, client)
        # 1. up: replied and encoded
        assert chat(agent, "I live in Lisbon.") == ("Noted.", None)
        assert encoder.encode_new_turns().error is None
        # 2. down: nothing listens on the port any more
        up.close()
        shown, err = chat(agent, "I keep a bearded dragon.")
        assert shown == "" and isinstance(err, ModelUnreachable)
        messages.append(str(err))
        enc = encoder.encode_new_turns()
        assert enc.error is not None and "were not encoded" in enc.error
        # 3. back, but resetting connections
        flaky = FakeLLM(port=port).start()
        flaky.set_default(Reply.fault("reset"))
        try:
            shown, err = chat(agent, "I work on Airflow.")
            assert shown == "" and isinstance(err, ModelBadReply)
            messages.append(str(err))
            assert encoder.encode_new_turns().error is not None
        finally:
            flaky.close()
        # 4. dropping mid-stream
        dropping = FakeLLM(port=port).start()
        dropping.set_default(Reply.fault("drop", content="Noted that you like tea", drop_after=2))
        try:
            shown, err = chat(agent, "I like green tea.")
            assert isinstance(err, ModelBadReply) and "closed in the middle" in str(err)
            messages.append(str(err))
        finally:
            dropping.close()
        # 5. back for good: the backlog is encoded, each turn once
        back = FakeLLM(port=port).start()
        back.respond_with(respond)
        try:
            enc = encoder.encode_new_turns()
            assert enc.error is None, enc.error
        finally:
            back.close()
    finally:
        client.close()
    assert "nothing is listening" in messages[0]
    assert "closed the connection without answering" in messages[1]
    assert sorted(f.text for f in store.active_facts()) == sorted(facts_for.values())
    assert store.get_meta(CURSOR_KEY) == str(store.turns()[-1].n)
    assert_sound(store, list(facts_for), "flapping server: up, down, reset, drop, back")


def test_a_server_flapping_mid_sleep_leaves_the_store_at_a_pass_boundary(tmp_path: Path) -> None:
    db = tmp_path / "nocturne.db"
    seed(db)
    answers = cooperative()
    flapped: list[str] = []

    def flap(task: str) -> Any:
        def answer(payload: dict[str, Any]) -> Any:
            if task == "merge" and not flapped:
                flapped.append(task)
                return Reply.fault("reset")  # the server drops the connection mid-sleep
            return answers[task](payload)
        return answer

    with FakeLLM() as server, Store(db) as store:
        server.respond_with(pass_responder({t: flap(t) for t in answers}))
        with make_client(server) as client:
            events = list(run_sleep(store, client, RetentionPolicy(), budget_tokens=4000))
            assert store.integrity_check() == "ok"
            (error,) = [e for e in events if e.kind == "pass error"]
            assert error.message.startswith("merge: ")
            assert "closed the connection without answering" in error.message
            assert events[-1].kind == "sleep failed"
            first = store.sleeps()[-1]
            assert first.status == "error"
            # the live state is the one the last finished pass (dedupe) left
            done = first.summary["passes"][-1]
            assert done["pass_name"] == "dedupe"
            after = sorted(f.id for f in store.state_at(done["snapshot_after"]) if f.active)
            assert sorted(f.id for f in store.active_facts()) == after
            assert not reaudit(store, first.id)[1]
            # the server is steady again: the next sleep runs every pass and audits clean
            events = list(run_sleep(store, client, RetentionPolicy(), budget_tokens=4000))
        assert events[-1].kind == "sleep done", events[-1].message
        assert store.integrity_check() == "ok"
        assert not reaudit(store, store.sleeps()[-1].id)[1]
    MATRIX.append({"scenario": "server resetting mid-sleep, then steady", "tried": 1,
                   "survived": 1, "lost": 0, "corrupted": 0})


# --- unusable encoder replies --------------------------------------------------------------------


UNUSABLE = {
    "unclosed outer object": (
        '{"facts": [{"text": "The user lives in Lisbon.", "category": "identity", "turn": 1}]',
        "never closed",
    ),
    "truncated": ('{"facts": [{"text": "The user lives in Lis', "no complete JSON object"),
    "unparseable": ("Sure! You live in Lisbon, which is lovely.", "no complete JSON object"),
    "object without facts": ('{"text": "The user lives in Lisbon.", "category": "identity"}',
                             "facts"),
}


@pytest.mark.parametrize("case", list(UNUSABLE))
def test_an_unusable_encoder_reply_is_a_refused_row_never_nothing_new(
    fake_llm: FakeLLM, store: Store, case: str
) -> None:
    raw, why = UNUSABLE[case]
    fake_llm.behave_like("text-only")  # the reply text goes to the parser as sent
    fake_llm.respond_with(lambda req: Reply.text(raw))
    store.add_turn("user", "I live in Lisbon.")
    with make_client(fake_llm) as client:
        result = Encoder(store, client).encode_new_turns()
    assert result.accepted == [] and result.error is not None
    assert "could not be used" in result.error and why in result.error
    (row,) = store.mutations(pass_name="encoder")
    assert not row.mutation.accepted
    assert row.mutation.rejection_reason and why in row.mutation.rejection_reason
    assert row.mutation.refs["raw"] == raw  # the excerpt, bounded (20,000 characters)
    assert store.get_meta(CURSOR_KEY) == "1"
    assert_sound(store, ["I live in Lisbon."], f"unusable encoder reply ({case})")


def test_a_password_typed_in_chat_stays_in_the_transcript_never_in_memory(
    fake_llm: FakeLLM, store: Store
) -> None:
    typed = "store: my password is hunter2 and I live in Lisbon"
    fake_llm.respond_with(encoder_or(Reply.text("Got it."), [
        {"text": "The user's password is hunter2.", "category": "context", "turn": 1},
        {"text": "The user lives in Lisbon.", "category": "identity", "turn": 1},
    ]))
    with make_client(fake_llm) as client:
        chat(ChatAgent(store, client), typed)
        result = Encoder(store, client).encode_new_turns()
    assert [f.text for f in result.accepted] == ["The user lives in Lisbon."]
    ((proposal, reason),) = result.rejected
    assert "hunter2" in proposal["text"] and reason.startswith("sensitive: looks like a password")
    assert store.turns()[0].text == typed  # the transcript keeps what was typed
    assert not any("hunter2" in f.text for f in store.all_facts())
    # the refusal is logged, the secret it refused is not (withheld from the audit row)
    assert not any("hunter2" in str(m.mutation.refs) for m in store.mutations())
    assert_sound(store, [typed], "a password typed in chat")
