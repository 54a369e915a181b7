"""Structured output: the response_format ladder, local validation, extraction and salvage."""

from __future__ import annotations

import json
import threading

import pytest
from pydantic import BaseModel, Field

from nocturne_desktop.core.ports import ModelHTTPError, ModelServerError
from nocturne_desktop.llm.client import (
    COMPACT_JSON_LINE,
    OpenAIClient,
    capabilities_for,
    structured_mode,
)
from nocturne_desktop.llm.schema import strict_schema
from tests.fakeserver import (
    LMSTUDIO_JSON_OBJECT_ERROR,
    STRICT_JSON_OBJECT_SCHEMA_ERROR,
    FakeLLM,
    Reply,
)
from tests.llm.conftest import ClientFactory

ASK = [
    {"role": "system", "content": "You find duplicate facts."},
    {"role": "user", "content": "Facts: m_1 likes tea; m_2 likes tea."},
]


class Pair(BaseModel):
    keep: str
    drop: str
    reason: str = ""


class Dedupe(BaseModel):
    pairs: list[Pair] = Field(max_length=3)


class Verdict(BaseModel):
    ok: bool
    note: str


GOOD = {"pairs": [{"keep": "m_1", "drop": "m_2", "reason": "same"}]}


def formats(fake_llm: FakeLLM) -> list[str | None]:
    return [r.response_format for r in fake_llm.chat_requests()]


def rungs(fake_llm: FakeLLM) -> list[str | None]:
    return [r.format_rung for r in fake_llm.chat_requests()]


# --- the ladder ----------------------------------------------------------------------------------


def test_json_schema_first_with_a_strict_bounded_schema(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    assert client.capabilities() == {"json_schema": "untested", "json_object_schema": "untested",
                                     "json_object": "untested"}
    fake_llm.script(Reply.json(GOOD))
    result = client.structured(ASK, Dedupe, max_tokens=200)
    assert result.value == Dedupe.model_validate(GOOD)
    assert result.mode == "json_schema" and result.error is None and not result.truncated
    (req,) = fake_llm.requests
    fmt = req.body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Dedupe" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["additionalProperties"] is False and schema["required"] == ["pairs"]
    assert schema["properties"]["pairs"]["maxItems"] == 3
    item = schema["properties"]["pairs"]["items"]
    assert item["additionalProperties"] is False
    assert item["required"] == ["keep", "drop", "reason"]
    assert "$defs" not in schema
    assert req.body["messages"] == ASK  # no extra line in json_schema mode
    assert client.capabilities() == {"json_schema": "supported", "json_object_schema": "untested",
                                     "json_object": "untested"}


def test_llama_cpp_python_500_on_json_schema_steps_down_to_json_object_with_the_schema_once(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    # Before: the step down went to a bare json_object and the schema was lost (issue 15).
    fake_llm.behave_like("llama-cpp-python")
    fake_llm.script(Reply.json(GOOD), Reply.json(GOOD))
    first = client.structured(ASK, Dedupe)
    assert first.mode == "json_object_schema" and first.value is not None
    assert "json_schema" in str(first.extras["stepped_down_after"])
    second = client.structured(ASK, Dedupe)
    assert second.mode == "json_object_schema" and second.value is not None
    assert formats(fake_llm) == ["json_schema", "json_object", "json_object"]
    assert rungs(fake_llm) == ["json_schema", "json_object_schema", "json_object_schema"]
    assert client.capabilities() == {"json_schema": "unsupported",
                                     "json_object_schema": "supported", "json_object": "untested"}
    strict = strict_schema(Dedupe)
    assert [r.sent_schema for r in fake_llm.chat_requests()] == [strict] * 3
    assert fake_llm.requests[-1].body["response_format"] == {"type": "json_object",
                                                            "schema": strict}
    system = fake_llm.requests[-1].body["messages"][0]
    assert system["role"] == "system" and system["content"].endswith(COMPACT_JSON_LINE)


def test_lm_studio_400_on_json_object_steps_down_to_text(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.behave_like("lmstudio")
    fake_llm.reject_format("json_schema", 422, "json_schema: grammar too complex")
    fake_llm.script(Reply.json(GOOD), Reply.json(GOOD))
    first = client.structured(ASK, Dedupe)
    assert first.mode == "text" and first.value is not None
    assert LMSTUDIO_JSON_OBJECT_ERROR in str(first.extras["stepped_down_after"])
    assert client.structured(ASK, Dedupe).mode == "text"
    # json_object is tried with the schema inside, then bare (one more probe, once per URL)
    assert rungs(fake_llm) == ["json_schema", "json_object_schema", "json_object", None, None]
    assert capabilities_for(fake_llm.base_url + "/") == {
        "json_schema": "unsupported",
        "json_object_schema": "unsupported",
        "json_object": "unsupported",
    }


def test_a_server_that_refuses_a_schema_inside_json_object_gets_a_bare_one(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.behave_like("strict-json-object")
    fake_llm.script(Reply.json(GOOD), Reply.json(GOOD))
    first = client.structured(ASK, Dedupe)
    assert first.mode == "json_object" and first.value is not None
    assert STRICT_JSON_OBJECT_SCHEMA_ERROR in str(first.extras["stepped_down_after"])
    assert client.structured(ASK, Dedupe).mode == "json_object"
    assert rungs(fake_llm) == ["json_schema", "json_object_schema", "json_object", "json_object"]
    assert fake_llm.requests[-1].body["response_format"] == {"type": "json_object"}
    assert structured_mode(client.capabilities()) == "json_object"


@pytest.mark.parametrize(
    ("engine", "rung"),
    [("openai", "json_schema"), ("llama.cpp", "json_schema"), ("vllm", "json_schema"),
     ("ollama", "json_schema"), ("llama-cpp-python", "json_object_schema"),
     ("strict-json-object", "json_object"), ("lmstudio", "json_schema"),
     ("text-only", None)],
)
def test_every_emulated_server_gets_the_schema_when_it_can_take_one(
    fake_llm: FakeLLM, client: OpenAIClient, engine: str, rung: str | None
) -> None:
    """The schema reaches every server that has a way to take it, in that server's form."""
    fake_llm.behave_like(engine)
    fake_llm.set_default(Reply.json(GOOD))
    for _ in range(2):
        assert client.structured(ASK, Dedupe).value == Dedupe.model_validate(GOOD)
    last = fake_llm.chat_requests()[-1]
    assert last.format_rung == rung
    assert last.sent_schema == (strict_schema(Dedupe) if rung in ("json_schema",
                                                                  "json_object_schema") else None)
    assert structured_mode(client.capabilities()) == (rung or "text")


def test_structured_mode_names_the_rung_in_use() -> None:
    assert structured_mode({}) is None
    assert structured_mode({"json_schema": "supported"}) == "json_schema"
    assert structured_mode({"json_schema": "unsupported"}) is None  # next rung not probed yet
    assert structured_mode({"json_schema": "unsupported",
                            "json_object_schema": "supported"}) == "json_object_schema"
    assert structured_mode({"json_schema": "unsupported", "json_object_schema": "unsupported",
                            "json_object": "unsupported"}) == "text"


def test_text_mode_adds_the_compact_line_as_a_leading_system_message(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.behave_like("text-only")
    client.structured([{"role": "user", "content": "hi"}], Verdict)
    sent = fake_llm.requests[-1].body["messages"]
    assert sent[0] == {"role": "system", "content": COMPACT_JSON_LINE}
    assert sent[1] == {"role": "user", "content": "hi"}


def test_the_probe_is_shared_by_every_client_of_the_base_url(
    fake_llm: FakeLLM, make_client: ClientFactory
) -> None:
    fake_llm.behave_like("text-only")
    fake_llm.set_default(Reply.json({"ok": True, "note": "n"}))
    make_client().structured(ASK, Verdict)
    probes = len(fake_llm.chat_requests())
    assert probes == 4  # json_schema, json_object + schema, json_object, text
    results: list[str] = []

    def work() -> None:
        c = make_client()
        for _ in range(3):
            results.append(c.structured(ASK, Verdict).mode)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == ["text"] * 12
    assert formats(fake_llm)[probes:] == [None] * 12


def test_a_400_that_is_not_about_response_format_is_raised(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.script(Reply.error(400, "maximum context length is 2048 tokens"))
    with pytest.raises(ModelHTTPError, match="maximum context length"):
        client.structured(ASK, Dedupe)
    fake_llm.script(Reply.error(500, "model crashed"))
    with pytest.raises(ModelServerError):
        client.structured(ASK, Dedupe)
    assert client.capabilities() == {"json_schema": "untested", "json_object_schema": "untested",
                                     "json_object": "untested"}


# --- local validation ----------------------------------------------------------------------------


def test_reply_is_validated_locally_even_in_json_schema_mode(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    bad = {"pairs": [{"keep": "m_1"}]}
    fake_llm.script(Reply.json(bad))
    result = client.structured(ASK, Dedupe)
    assert result.value is None and result.mode == "json_schema"
    assert result.error is not None
    assert "Dedupe" in result.error and "pairs.0.drop" in result.error
    assert result.raw == json.dumps(bad, separators=(",", ":"))


def test_max_items_is_enforced_locally(fake_llm: FakeLLM, client: OpenAIClient) -> None:
    many = {"pairs": [{"keep": f"m_{i}", "drop": f"m_{i + 1}"} for i in range(5)]}
    fake_llm.script(Reply.json(many))
    result = client.structured(ASK, Dedupe)
    assert result.value is None
    assert result.error is not None and "at most 3" in result.error


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply.text("I could not find any duplicates, sorry."), "no complete JSON object"),
        (Reply.text(""), "empty"),
        (Reply.text('{"pairs": [ {"keep": "m_1", '), "no complete JSON object"),
    ],
    ids=["prose", "empty", "unbalanced"],
)
def test_unparseable_replies_are_returned_not_raised(
    fake_llm: FakeLLM, client: OpenAIClient, reply: Reply, error: str
) -> None:
    fake_llm.script(reply)
    result = client.structured(ASK, Dedupe)
    assert result.value is None and not result.truncated
    assert result.error is not None and error in result.error
    assert result.raw == reply.content


@pytest.mark.parametrize(
    "reply",
    [
        Reply.json(GOOD, think="Let me compare {m_1} and {m_2} carefully..."),
        Reply.json(GOOD, fence=True),
        Reply.json(GOOD, prose=True),
        Reply.json(GOOD, pretty=True, fence=True, think="hmm"),
        Reply.text("Hmm, {m_1} vs {m_2}.</think>\n" + json.dumps(GOOD)),
        Reply.json(GOOD, reasoning='{"pairs": []} is what I would not say'),
    ],
    ids=["think", "fence", "prose", "all-three", "think-without-opening-tag", "reasoning-content"],
)
def test_extraction_in_the_wild(fake_llm: FakeLLM, client: OpenAIClient, reply: Reply) -> None:
    fake_llm.script(reply)
    result = client.structured(ASK, Dedupe)
    assert result.error is None
    assert result.value == Dedupe.model_validate(GOOD)


def test_braces_inside_strings_do_not_confuse_extraction(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    tricky = {"ok": True, "note": 'a "{quoted}" brace } and { another \\ one'}
    fake_llm.script(Reply.json(tricky, prose=True))
    result = client.structured(ASK, Verdict)
    assert result.value == Verdict.model_validate(tricky)


def test_usage_estimated_for_structured_without_usage(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.script(Reply.json(GOOD, usage=False))
    result = client.structured(ASK, Dedupe)
    assert result.usage.estimated and result.usage.completion_tokens > 0


# --- truncation and salvage (S-LLM-4) ------------------------------------------------------------


def cut(obj: object, keep_chars: int) -> str:
    return json.dumps(obj, separators=(",", ":"))[:keep_chars]


def test_length_cut_salvages_the_complete_entries(fake_llm: FakeLLM, client: OpenAIClient) -> None:
    full = {
        "pairs": [
            {"keep": "m_1", "drop": "m_2", "reason": "same words"},
            {"keep": "m_3", "drop": "m_4", "reason": "a [bracket] and a } brace"},
            {"keep": "m_5", "drop": "m_6", "reason": "cut here"},
        ]
    }
    text = cut(full, -12)
    fake_llm.script(Reply.text(text, finish_reason="length"))
    result = client.structured(ASK, Dedupe, max_tokens=40)
    assert result.truncated and result.salvaged and result.finish_reason == "length"
    assert result.value is not None
    assert [p.keep for p in result.value.pairs] == ["m_1", "m_3"]
    assert result.extras["salvaged_entries"] == 2 and result.extras["dropped_entries"] == 0
    assert "40 tokens" in str(result.extras["note"])
    assert result.raw == text


def test_salvage_drops_complete_but_invalid_entries(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    text = (
        '```json\n{"pairs": [{"keep": "m_1", "drop": "m_2"}, {"keep": "m_9"}, {"keep": "m_3", "dr'
    )
    fake_llm.script(Reply.text(text, finish_reason="length"))
    result = client.structured(ASK, Dedupe, max_tokens=30)
    assert result.value is not None and result.salvaged
    assert [p.keep for p in result.value.pairs] == ["m_1"]
    assert result.extras["dropped_entries"] == 1


def test_length_cut_without_a_single_list_field_is_refused(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.script(Reply.text('{"ok": true, "note": "this goes on and o', finish_reason="length"))
    result = client.structured(ASK, Verdict, max_tokens=12)
    assert result.truncated and not result.salvaged and result.value is None
    assert result.error is not None
    assert result.error.startswith("reply cut off at max_tokens (12 tokens)")


def test_length_cut_before_any_complete_entry(fake_llm: FakeLLM, client: OpenAIClient) -> None:
    fake_llm.script(Reply.text('{"pairs": [{"keep": "m_1", "dro', finish_reason="length"))
    result = client.structured(ASK, Dedupe)
    assert result.value is None and result.truncated
    assert result.error is not None and "no complete valid entry" in result.error
    assert "max_tokens (" in result.error  # the server's own count when max_tokens was not given


def test_length_finish_with_complete_json_keeps_the_value(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.script(Reply.json(GOOD, finish_reason="length"))
    result = client.structured(ASK, Dedupe, max_tokens=20)
    assert result.truncated and not result.salvaged
    assert result.value == Dedupe.model_validate(GOOD)
