"""Chat tuning (the built-in model's): what free-text requests carry, and what structured ones
never do."""

from __future__ import annotations

from pydantic import BaseModel

from nocturne_desktop.core.ports import ChatTuning
from nocturne_desktop.llm import tuning
from tests.fakeserver import FakeLLM, Reply
from tests.llm.conftest import ClientFactory

HI = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello."}]
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
          "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
GEMMA = "{{ '<start_of_turn>' + role + '\\n' + content + '<end_of_turn>\\n' }}"


class Answer(BaseModel):
    answer: str


def test_the_built_in_model_is_recognised_by_its_name() -> None:
    for name in ("SmolLM2-135M-Instruct.Q4_1", "smollm2-135m-instruct", "HuggingFaceTB/SmolLM2-135M"):
        assert tuning.tuning_for(name) is tuning.BUILTIN
    for name in ("", "llama-3.2-3b", "qwen2.5-7b-instruct", "SmolLM2-1.7B-Instruct"):
        assert tuning.tuning_for(name) is None


def test_stops_come_from_the_chat_templates_turn_markers() -> None:
    assert tuning.template_stops(CHATML) == ("<|im_start|>", "<|im_end|>")
    assert tuning.template_stops(GEMMA) == ("<start_of_turn>", "<end_of_turn>")
    assert tuning.template_stops("{{ messages }}") == ()


def test_a_tuned_chat_carries_the_cap_the_samplers_and_the_templates_stops(
    fake_llm: FakeLLM, make_client: ClientFactory,
) -> None:
    fake_llm.props = {"chat_template": CHATML}
    fake_llm.script(Reply.text("Hello."), Reply.text("Hi."), Reply.json({"answer": "x"}))
    client = make_client(model="SmolLM2-135M-Instruct.Q4_1")
    assert client.tuning is tuning.BUILTIN
    assert client.chat(HI, max_tokens=512).text == "Hello."
    assert "".join(client.stream(HI)) == "Hi."
    client.structured(HI, Answer, max_tokens=300)
    chat, stream, structured = fake_llm.chat_requests()
    for body in (chat.body, stream.body):
        assert body["max_tokens"] == tuning.BUILTIN.max_tokens == 120
        assert body["stop"] == ["<|im_start|>", "<|im_end|>", "\n\n"]  # + a paragraph break
        assert body["dry_multiplier"] == 0.8 and body["repeat_penalty"] == 1.1
    # structured output keeps its own budget and no penalty that would fight the JSON
    assert structured.body["max_tokens"] == 300
    assert not {"stop", "dry_multiplier", "repeat_penalty"} & set(structured.body)
    assert [r.path for r in fake_llm.requests].count("/props") == 1  # asked once per server


def test_an_untuned_model_sends_what_it_always_sent(
    fake_llm: FakeLLM, make_client: ClientFactory,
) -> None:
    fake_llm.props = {"chat_template": CHATML}
    fake_llm.script(Reply.text("Hello."))
    client = make_client(model="llama-3.2-3b")
    assert client.tuning is None
    client.chat(HI, max_tokens=512)
    body = fake_llm.chat_requests()[0].body
    assert body["max_tokens"] == 512 and "stop" not in body and "repeat_penalty" not in body
    assert all(r.path != "/props" for r in fake_llm.requests)


def test_tuning_can_be_given_or_refused_explicitly(
    fake_llm: FakeLLM, make_client: ClientFactory,
) -> None:
    own = ChatTuning("mine", max_tokens=50, sampling={"top_k": 20}, stop=("END",))
    fake_llm.script(Reply.text("a"), Reply.text("b"))
    make_client(model="llama-3.2-3b", tuning=own).chat(HI)
    make_client(model="SmolLM2-135M-Instruct", tuning=None).chat(HI, max_tokens=512)
    first, second = (r.body for r in fake_llm.chat_requests())
    assert first["max_tokens"] == 50 and first["top_k"] == 20 and first["stop"] == ["END"]
    assert second["max_tokens"] == 512 and "stop" not in second
    assert all(r.path != "/props" for r in fake_llm.requests)  # a server without /props: fine


def test_a_server_without_props_still_gets_the_static_stops(
    fake_llm: FakeLLM, make_client: ClientFactory,
) -> None:
    fake_llm.script(Reply.text("Hello."))
    make_client(model="SmolLM2-135M-Instruct").chat(HI)
    assert fake_llm.chat_requests()[0].body["stop"] == ["<|im_start|>", "<|im_end|>", "\n\n"]


def test_cached_prompt_tokens_are_read_from_the_usage() -> None:
    from nocturne_desktop.llm.client import _usage

    raw = {"prompt_tokens": 300, "completion_tokens": 2,
           "prompt_tokens_details": {"cached_tokens": 280}}  # as llama-server sends it
    assert _usage(raw, HI, "Hello.").cached_tokens == 280
    assert _usage({"prompt_tokens": 3, "completion_tokens": 2}, HI, "x").cached_tokens is None
