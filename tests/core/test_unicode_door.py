"""Unicode read alike in every measure: NFC at the door (the user's turn, the model's reply,
facts) and combining marks part of words, so "Zoe" + U+0301 is found in the transcript."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from nocturne_desktop.core.chat.agent import ChatAgent
from nocturne_desktop.core.chat.encoder import Encoder, check_fact
from nocturne_desktop.core.judges import textmath as tm
from nocturne_desktop.core.store import Store
from tests.core.fakemodel import Chunks, FakeModel

DECOMPOSED = "Zoe\u0301"  # e + COMBINING ACUTE ACCENT, as some keyboards and pastes send it
COMPOSED = "Zo\u00e9"


@pytest.mark.parametrize("claim", [DECOMPOSED, COMPOSED], ids=["claim-nfd", "claim-nfc"])
@pytest.mark.parametrize("said", [DECOMPOSED, COMPOSED], ids=["said-nfd", "said-nfc"])
def test_a_name_with_a_combining_mark_is_found_in_the_transcript(claim: str, said: str) -> None:
    assert check_fact(f"The user's friend is {claim}.", [f"user: My friend is {said}."]) is None


def test_a_mark_that_does_not_compose_stays_in_its_word() -> None:
    name = "Ba\u0332rt"  # COMBINING LOW LINE has no precomposed form
    assert name in tm.names_written([f"I met {name} today."])
    assert check_fact(f"The user met {name}.", [f"user: I met {name} today."]) is None
    assert tm.tokens(f"{name} x") == [name.lower(), "x"]


def test_turns_and_facts_enter_the_store_nfc(tmp_path: Path) -> None:
    model = FakeModel(replies=[
        Chunks("Hello ", "Zoe", "\u0301", "!"),  # the mark arrives in its own delta
        {"facts": [{"text": f"The user's friend is {DECOMPOSED}.", "category": "context",
                    "turn": 1}]},
    ])
    with Store(tmp_path / "n.db") as store:
        stream = ChatAgent(store, model).stream_reply(f"My friend is {DECOMPOSED}.")
        assert "".join(stream) == f"Hello {DECOMPOSED}!"
        result = Encoder(store, model).encode_new_turns()
        user, bot = store.turns()
        assert user.text == f"My friend is {COMPOSED}."
        assert bot.text == f"Hello {COMPOSED}!"
        assert [f.text for f in result.accepted] == [f"The user's friend is {COMPOSED}."]
        for text in (user.text, bot.text, result.accepted[0].text):
            assert unicodedata.is_normalized("NFC", text)
