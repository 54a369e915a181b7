"""Cancel closes the connection (article bug 9: an abandoned request keeps a local engine busy).

Each test measures two things: the call returns within a second of the cancel, and the server
itself sees the connection go away (so it would stop generating).
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import BaseModel

from nocturne_desktop.core.cancel import CancelToken
from nocturne_desktop.core.ports import ModelCancelled
from nocturne_desktop.llm.client import OpenAIClient
from tests.fakeserver import FakeLLM, Reply

HI = [{"role": "user", "content": "Tell me a long story."}]


def cancel_after(token: CancelToken, seconds: float) -> threading.Thread:
    t = threading.Thread(target=lambda: (time.sleep(seconds), token.cancel()), daemon=True)
    t.start()
    return t


def assert_closed_promptly(fake_llm: FakeLLM, cancelled_at: float, returned_at: float) -> None:
    assert returned_at - cancelled_at < 1.0, (
        f"call returned {returned_at - cancelled_at:.3f} s late"
    )
    seen = fake_llm.wait_for_disconnect(timeout=2.0)
    assert seen is not None, "the server never saw the connection close"
    assert seen - cancelled_at < 1.0
    assert not fake_llm.requests[-1].completed


def test_cancel_mid_stream(fake_llm: FakeLLM, client: OpenAIClient) -> None:
    fake_llm.script(Reply.stream_of([f"w{i} " for i in range(1000)], token_delay=0.01))
    token = CancelToken()
    got: list[str] = []
    cancelled_at: list[float] = []

    def stop() -> None:
        cancelled_at.append(time.monotonic())
        token.cancel()

    with pytest.raises(ModelCancelled) as info:
        for piece in client.stream(HI, cancel=token):
            got.append(piece)
            if len(got) == 5:
                threading.Thread(target=stop, daemon=True).start()
    returned = time.monotonic()
    assert 5 <= len(got) < 1000
    assert "cancelled" in str(info.value) and fake_llm.base_url in str(info.value)
    assert_closed_promptly(fake_llm, cancelled_at[0], returned)
    assert client.last_result is None


def test_cancel_from_another_thread_while_chat_reads(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.script(Reply.stream_of([f"w{i} " for i in range(1000)], token_delay=0.02))
    token = CancelToken()
    cancel_after(token, 0.3)
    start = time.monotonic()
    with pytest.raises(ModelCancelled):
        client.chat(HI, cancel=token)
    returned = time.monotonic()
    assert returned - start > 0.25
    assert_closed_promptly(fake_llm, start + 0.3, returned)


def test_cancel_before_the_first_token(fake_llm: FakeLLM, client: OpenAIClient) -> None:
    """The server holds the request (prompt processing); nothing has been received yet."""
    for reply in (
        Reply.fault("hang"),
        Reply.text("late", delay_headers=30),
        Reply.text("x", delay=30),
    ):
        fake_llm.script(reply)
        token = CancelToken()
        cancel_after(token, 0.2)
        start = time.monotonic()
        with pytest.raises(ModelCancelled):
            client.chat(HI, cancel=token)
        assert_closed_promptly(fake_llm, start + 0.2, time.monotonic())


def test_already_cancelled_token_sends_nothing(fake_llm: FakeLLM, client: OpenAIClient) -> None:
    token = CancelToken()
    token.cancel()
    with pytest.raises(ModelCancelled):
        client.chat(HI, cancel=token)
    with pytest.raises(ModelCancelled):
        list(client.stream(HI, cancel=token))
    assert fake_llm.requests == []


class Answer(BaseModel):
    answer: str


def test_cancel_during_structured_is_raised_not_stepped_down(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    fake_llm.script(Reply.fault("hang"))
    token = CancelToken()
    cancel_after(token, 0.2)
    start = time.monotonic()
    with pytest.raises(ModelCancelled):
        client.structured(HI, Answer, cancel=token)
    assert_closed_promptly(fake_llm, start + 0.2, time.monotonic())
    assert len(fake_llm.chat_requests()) == 1
    assert client.capabilities()["json_schema"] == "untested"


def test_client_works_after_a_cancel_and_the_token_callback_is_released(
    fake_llm: FakeLLM, client: OpenAIClient
) -> None:
    token = CancelToken()
    fake_llm.script(Reply.text("first"))
    assert client.chat(HI, cancel=token).text == "first"
    fake_llm.script(Reply.fault("hang"))
    cancel_after(token, 0.1)
    with pytest.raises(ModelCancelled):
        client.chat(HI, cancel=token)
    fake_llm.script(Reply.text("again"))
    assert client.chat(HI, cancel=CancelToken()).text == "again"
    # A finished call unregistered its callback: cancelling a used token later is harmless.
    used = CancelToken()
    client.chat(HI, cancel=used)
    used.cancel()


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[FakeLLM, str]]:
    """The fake server over HTTPS with a throw-away self-signed certificate."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    server = FakeLLM(tls=(str(cert), str(key))).start()
    yield server, str(cert)
    server.close()


def test_cancel_over_tls_reaches_the_tls_socket(tls_server: tuple[FakeLLM, str]) -> None:
    """With TLS the plain socket is detached from its fd; the cancel must use the TLS one."""
    server, cert = tls_server
    ctx = ssl.create_default_context(cafile=cert)
    ctx.check_hostname = False
    transport = httpx.HTTPTransport(verify=ctx, limits=httpx.Limits(max_keepalive_connections=0))
    with OpenAIClient(server.base_url, "fake-model", transport=transport) as client:
        assert server.base_url.startswith("https://")
        server.script(Reply.text("secure"), Reply.fault("hang"))
        assert client.chat(HI).text == "secure"
        token = CancelToken()
        cancel_after(token, 0.2)
        start = time.monotonic()
        with pytest.raises(ModelCancelled):
            client.chat(HI, cancel=token)
        assert_closed_promptly(server, start + 0.2, time.monotonic())
