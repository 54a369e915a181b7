"""The write-time encoder: gate reasons, the extracted_through cursor, atomicity (S-ENC-1..3)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nocturne_desktop.core.cancel import CancelToken
from nocturne_desktop.core.chat.encoder import (
    CURSOR_KEY,
    Encoder,
    EncoderReply,
    check_category,
    check_fact,
    encoder_contract,
)
from nocturne_desktop.core.ports import ModelCancelled, ModelUnreachable
from nocturne_desktop.core.store import Store
from tests.core.fakemodel import FakeCall, FakeModel, Truncated


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "memory.db") as s:
        yield s


def facts(*entries: tuple[str, str, int]) -> dict[str, Any]:
    return {"facts": [{"text": t, "category": c, "turn": n} for t, c, n in entries]}


# -- the gate, pure -------------------------------------------------------------------------


def test_gate_accepts_a_traceable_fact() -> None:
    assert check_fact("The user lives in Lisbon.", ["user: I live in Lisbon."]) is None


def test_gate_names_the_invented_token() -> None:
    reason = check_fact(
        "The user prefers coffee in the morning.",
        ["user: I drink coffee in the morning."],
    )
    assert reason == "fact is not traceable to the transcript: 1 content token(s) invented (prefer)"


def test_gate_counts_every_invented_token() -> None:
    reason = check_fact(
        "The user migrated to Kubernetes on the backup box.",
        ["user: I installed postgres 16 on the backup box."],
    )
    assert reason is not None
    assert "2 content token(s) invented (migrated, kubernete)" in reason


def test_gate_refuses_a_new_proper_noun_and_names_it() -> None:
    transcript = ["user: the kitchen leaks and I installed postgres on the box."]
    reason = check_fact("The user installed postgres and the Kitchen leaks.", transcript)
    assert reason == "fact introduces proper noun(s) absent from the transcript: Kitchen"


def test_gate_knows_names_written_at_a_sentence_start() -> None:
    transcript = ["user: Saffron is my bearded dragon."]
    assert check_fact("The user's bearded dragon is called Saffron.", transcript) is not None
    assert check_fact("The user's bearded dragon is Saffron.", transcript) is None


def test_gate_apostrophes_make_no_phantom_tokens() -> None:
    """Article bug 3: "user's" must not leave an invented "s" behind."""
    transcript = ["user: my dog's name is Rex and it's my sister's dog."]
    assert check_fact("The user's dog's name is Rex.", transcript) is None
    assert check_fact("The user’s sister’s dog is Rex.", transcript) is None


def test_gate_folds_inflection_on_both_sides() -> None:
    """Article bug 4: "only use Python" supports "uses Python"."""
    assert check_fact("The user uses Python.", ["user: I only use Python at work."]) is None
    assert check_fact("The user keeps two cats.", ["user: I keep a cat, two in fact."]) is None


def test_gate_refuses_empty_and_wordless_text() -> None:
    assert check_fact("   ", ["user: hello"]) == "fact text is empty"
    assert check_fact("The user.", ["user: hello"]) == "fact has no content words"
    assert check_fact("x" * 400, ["user: " + "x" * 400]) is not None
    assert check_fact("The user likes \ud800 tea.", ["user: I like tea"]) == (
        "fact text is not valid Unicode"
    )


def test_gate_refuses_unknown_category() -> None:
    assert check_category("preferences") is None
    reason = check_category("gossip")
    assert reason is not None and "unknown category 'gossip'" in reason


def test_contract_bounds_the_facts_array() -> None:
    schema = encoder_contract(3).model_json_schema()
    assert schema["properties"]["facts"]["maxItems"] == 3
    assert issubclass(encoder_contract(3), EncoderReply)
    item = schema["$defs"]["ProposedFact"]["properties"]
    assert set(item) == {"text", "category", "turn", "importance"}
    assert item["category"]["enum"] == ["identity", "preferences", "commitments", "event", "context"]


# -- the encoder over a real store ----------------------------------------------------------


def test_accepted_facts_go_to_scratch_with_their_turn_and_every_proposal_is_logged(
    store: Store,
) -> None:
    store.add_turn("user", "I live in Lisbon and I drink coffee in the morning.")
    store.add_turn("assistant", "Lisbon mornings sound lovely.")
    model = FakeModel(
        [
            facts(
                ("The user lives in Lisbon.", "identity", 1),
                ("The user prefers coffee in the morning.", "preferences", 1),
                ("The user moved to Lisbon from Porto.", "event", 1),
                ("The user drinks coffee.", "gossip", 1),
                ("The user lives in Lisbon.", "identity", 1),
            )
        ]
    )
    result = Encoder(store, model).encode_new_turns()

    assert result.error is None
    assert result.turns == (1, 2)
    # Identical facts proposed in one reply are stored once (S-MEAN-6); repeats across turns
    # are Dedupe's job (S-ENC-3, see the next test).
    assert [f.text for f in result.accepted] == ["The user lives in Lisbon."]
    assert all(f.block == "scratch" and f.source_turn == 1 for f in result.accepted)
    assert [f.text for f in store.get_block("scratch")] == ["The user lives in Lisbon."]
    reasons = [r for _, r in result.rejected]
    assert reasons[0] == "fact is not traceable to the transcript: 1 content token(s) invented (prefer)"
    # Coverage speaks before the proper-noun rule.
    assert reasons[1].endswith("2 content token(s) invented (moved, porto)")
    assert "unknown category 'gossip'" in reasons[2]
    assert reasons[3].startswith("same fact as proposal 1 of this reply")
    assert store.get_meta(CURSOR_KEY) == "2"

    rows = store.mutations(pass_name="encoder")
    assert len(rows) == 5
    assert all(r.seq is None and r.sleep_id is None for r in rows)
    accepted = [r.mutation for r in rows if r.mutation.accepted]
    refused = [r.mutation for r in rows if not r.mutation.accepted]
    assert {m.item_id for m in accepted} == {f.id for f in result.accepted}
    assert all(m.kind == "append" and m.decided_by == "encoder" for m in accepted + refused)
    assert all(m.item_id == "-" for m in refused)
    assert {m.rejection_reason for m in refused} == set(reasons)
    assert refused[0].refs["proposal"]["text"] == "The user prefers coffee in the morning."
    assert refused[0].refs["turn"] == 1


def test_the_gate_checks_against_the_text_that_was_sent(store: Store) -> None:
    """The assistant's words are part of the transcript; the role label makes "user" known."""
    store.add_turn("assistant", "What is your bearded dragon called?")
    store.add_turn("user", "Saffron.")
    model = FakeModel([facts(("The user's bearded dragon is called Saffron.", "identity", 2))])
    result = Encoder(store, model).encode_new_turns()
    assert [f.text for f in result.accepted] == ["The user's bearded dragon is called Saffron."]
    assert result.accepted[0].source_turn == 2


def test_a_turn_number_outside_the_new_turns_is_corrected_and_recorded(store: Store) -> None:
    # three different facts: identical ones in one reply would collapse into one
    store.add_turn("user", "I live in Lisbon. I work in Porto. I swim in Faro.")
    store.add_turn("assistant", "Lisbon is lovely.")
    model = FakeModel(
        [
            {
                "facts": [
                    {"text": "The user lives in Lisbon.", "category": "identity", "turn": 99},
                    {"text": "The user works in Porto.", "category": "identity"},
                    {"text": "The user swims in Faro.", "category": "identity", "turn": "1"},
                ]
            }
        ]
    )
    result = Encoder(store, model).encode_new_turns()
    assert [f.source_turn for f in result.accepted] == [2, 2, 1]
    rows = [r.mutation.refs for r in store.mutations(pass_name="encoder")]
    assert rows[0]["claimed_turn"] == 99 and rows[0]["turn"] == 2
    assert rows[1]["claimed_turn"] is None and rows[1]["turn"] == 2
    assert "claimed_turn" not in rows[2] and rows[2]["turn"] == 1


def test_nothing_new_means_no_request(store: Store) -> None:
    model = FakeModel()
    result = Encoder(store, model).encode_new_turns()
    assert result.turns is None and result.requests == 0 and model.calls == []


def _marker(n: int) -> str:
    return f"marker{n:03d}"


def _exchange(store: Store, i: int) -> None:
    store.add_turn("user", f"I said {_marker(2 * i - 1)} about my garden today.")
    store.add_turn("assistant", f"Noted, is {_marker(2 * i)} about the garden?")


def test_each_request_holds_only_the_new_turns_and_one_context_turn(store: Store) -> None:
    """Article bug 2: a cursor keeps the encoder linear."""
    model = FakeModel(responder=lambda call: {"facts": []})
    encoder = Encoder(store, model)
    for i in range(1, 51):
        _exchange(store, i)
        result = encoder.encode_new_turns()
        assert result.error is None and result.turns == (2 * i - 1, 2 * i)
        request = model.calls[-1].last_user
        new_a, new_b = 2 * i - 1, 2 * i
        present = {n for n in range(1, new_b + 1) if _marker(n) in request}
        expected_context = {new_a - 1} if i > 1 else set()
        assert present == {new_a, new_b} | expected_context
        if i > 1:
            context_part, new_part = request.split("NEW TURNS:")
            assert _marker(new_a - 1) in context_part and "CONTEXT" in context_part
            assert _marker(new_a) in new_part and _marker(new_a - 1) not in new_part
    assert store.get_meta(CURSOR_KEY) == "100"
    sizes = [c.chars for c in model.calls]
    # Linear: the 50th request is the same size as the 10th, give or take digits.
    assert abs(sizes[49] - sizes[9]) <= 8
    assert sizes[0] < sizes[9]  # the first request has no context turn
    print(f"\nencoder request chars: turn 1={sizes[0]} turn 10={sizes[9]} turn 50={sizes[49]}")


def test_a_backlog_is_sent_in_bounded_batches(store: Store) -> None:
    for i in range(1, 11):
        _exchange(store, i)
    model = FakeModel(responder=lambda call: {"facts": []})
    result = Encoder(store, model, max_turns=8).encode_new_turns()
    assert result.requests == 3 and result.turns == (1, 20)
    assert [c.last_user.count("[turn ") for c in model.calls] == [8, 9, 5]  # + context turn


def test_a_model_error_leaves_the_cursor_and_the_turns_are_retried(store: Store) -> None:
    _exchange(store, 1)
    model = FakeModel([ModelUnreachable("Nothing is listening at http://127.0.0.1:9/v1.")])
    encoder = Encoder(store, model)
    result = encoder.encode_new_turns()
    assert result.error is not None and "turns 1-2 were not encoded" in result.error
    assert "Nothing is listening" in result.error
    assert result.turns is None and store.get_meta(CURSOR_KEY) is None
    assert store.mutations(pass_name="encoder") == []

    _exchange(store, 2)
    model.queue(facts(("The user has a garden.", "event", 1)))
    result = encoder.encode_new_turns()
    assert result.error is None and result.turns == (1, 4)
    assert all(_marker(n) in model.calls[-1].last_user for n in range(1, 5))
    assert [f.source_turn for f in result.accepted] == [1]


@pytest.mark.parametrize(
    "reply",
    [
        "Sure! Here are the facts: the user likes gardens.",
        {"facts": [{"category": "event", "turn": 1}]},
        {"facts": [{"text": "a", "category": "event", "turn": 1}] * 13},
        Truncated('{"facts": [{"text": "The user has a gar'),
    ],
    ids=["not-json", "missing-text", "too-many", "truncated"],
)
def test_an_unusable_reply_is_logged_raw_and_the_cursor_moves_on(store: Store, reply: Any) -> None:
    """A reply the model did send but that cannot be used is not retried (at temperature 0 it
    would repeat, and the backlog would grow every turn): it is logged with its raw text."""
    _exchange(store, 1)
    model = FakeModel([reply])
    result = Encoder(store, model).encode_new_turns()
    assert result.error is not None
    assert result.error.startswith("turns 1-2: the model's reply could not be used: ")
    assert store.get_meta(CURSOR_KEY) == "2"
    assert store.get_block("scratch") == []
    (row,) = store.mutations(pass_name="encoder")
    assert not row.mutation.accepted and row.mutation.refs["turns"] == [1, 2]
    assert "could not be used" in (row.mutation.rejection_reason or "")
    assert row.mutation.refs["raw"] == model.calls[0].reply_text
    _exchange(store, 2)
    model.queue(facts(("The user has a garden.", "event", 3)))
    Encoder(store, model).encode_new_turns()
    assert _marker(1) not in model.calls[-1].last_user  # the failed turns are not re-sent


def test_a_cut_off_reply_keeps_the_salvaged_facts_and_says_so(store: Store) -> None:
    _exchange(store, 1)
    raw = '{"facts": [{"text": "The user has a garden.", "category": "event", "turn": 1}, {"te'
    model = FakeModel([Truncated(raw, salvage=facts(("The user has a garden.", "event", 1)))])
    result = Encoder(store, model).encode_new_turns()
    assert result.error is None and [f.text for f in result.accepted] == ["The user has a garden."]
    assert result.notes == [
        "turns 1-2: the reply was cut off; only the facts that could be salvaged were gated"
    ]
    assert store.get_meta(CURSOR_KEY) == "2"  # re-sending would be cut off the same way


def test_transport_errors_never_skip_turns(store: Store) -> None:
    _exchange(store, 1)
    model = FakeModel(responder=lambda call: ModelUnreachable("nothing listening"))
    encoder = Encoder(store, model)
    for _ in range(5):
        assert encoder.encode_new_turns().error is not None
    assert store.get_meta(CURSOR_KEY) is None and store.mutations(pass_name="encoder") == []


def test_cancellation_propagates_and_writes_nothing(store: Store) -> None:
    _exchange(store, 1)
    with pytest.raises(ModelCancelled):
        Encoder(store, FakeModel([ModelCancelled("cancelled")])).encode_new_turns()
    token = CancelToken()

    def cancel_while_answering(call: FakeCall) -> dict[str, Any]:
        token.cancel()  # the reply arrives, but the user already pressed stop
        return facts(("The user has a garden.", "event", 1))

    with pytest.raises(ModelCancelled):
        Encoder(store, FakeModel(responder=cancel_while_answering)).encode_new_turns(token)
    assert store.get_meta(CURSOR_KEY) is None and store.get_block("scratch") == []


def test_appends_rows_and_cursor_are_one_transaction(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    _exchange(store, 1)
    model = FakeModel([facts(("The user has a garden.", "event", 1))])

    def boom(*args: object, **kwargs: object) -> list[int]:
        raise RuntimeError("disk full while logging")

    monkeypatch.setattr(store, "record_mutations", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        Encoder(store, model).encode_new_turns()
    assert store.get_block("scratch") == []
    assert store.active_count() == 0
    assert store.get_meta(CURSOR_KEY) is None


def test_the_assistants_own_statements_are_not_evidence(store: Store) -> None:
    """Seen with SmolLM2-135M: it stored its own chatter about the user's pet as a fact."""
    store.add_turn("user", "I keep a bearded dragon called Saffron.")
    store.add_turn("assistant", "Saffron is a bit of a big, imposing one. What does she eat?")
    model = FakeModel([facts(("Saffron is a bit of a big, imposing one.", "preferences", 2),
                             ("The user keeps a bearded dragon called Saffron.", "preferences", 1))])
    result = Encoder(store, model).encode_new_turns()
    assert [f.text for f in result.accepted] == ["The user keeps a bearded dragon called Saffron."]
    (refused,) = result.rejected
    assert "not traceable" in refused[1] and "imposing" in refused[1]
    sent = model.calls[0].last_user
    assert "What does she eat?" in sent and "imposing" not in sent  # statements are not shown


def test_finding_the_assistants_questions_is_linear() -> None:
    """Regression: a backtracking pattern took ~2 s on a 30 KB reply without a question mark,
    freezing the window's encoder step. 200 KB must be nowhere near that."""
    import time

    from nocturne_desktop.core.chat.encoder import questions

    text = " ".join(f"tok{i}" for i in range(30000))
    t0 = time.perf_counter()
    assert questions(text) == []
    assert time.perf_counter() - t0 < 0.5
    assert questions("Noted. What does she eat? Fine!\nIs it ok?") == ["What does she eat?", "Is it ok?"]
