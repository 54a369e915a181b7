"""The embedding model: it loads from the installed package with the network blocked, its
vectors are WordLlama's own, and a paraphrase lies nearer its fact than small talk does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nocturne_desktop.core import embedder as emb

NO_NETWORK = r"""
import json, socket, sys
def refuse(*a, **k):
    raise OSError("network blocked for the offline test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from nocturne_desktop.core.embedder import default_embedder, load_error
e = default_embedder()
assert e is not None, load_error()
v = e.embed(["Maya works as a nurse at Southmead Hospital.", "What does she do for a living?"])
print(json.dumps({"name": e.name, "dim": e.dim, "shape": list(v.shape),
                  "norms": [float(x) for x in (v ** 2).sum(axis=1)],
                  "cos": float(v[0] @ v[1]),
                  "loaded": sorted(m for m in sys.modules if m.split(".")[0] in
                                   ("requests", "huggingface_hub", "wordllama", "urllib3"))}))
"""


def test_the_model_loads_and_embeds_with_the_network_blocked() -> None:
    out = subprocess.run([sys.executable, "-c", NO_NETWORK], capture_output=True, text=True,
                         check=False, env={"PATH": "", "HOME": "/nonexistent", "HF_HUB_OFFLINE": "0"})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["dim"] == 256 and got["shape"] == [2, 256]
    assert all(abs(n - 1.0) < 1e-5 for n in got["norms"])
    assert got["name"].startswith("wordllama-0.4")
    assert got["loaded"] == []  # nothing that downloads is even imported
    assert 0.0 < got["cos"] < 1.0


def test_the_blocker_really_blocks_the_network() -> None:
    code = NO_NETWORK.split("from nocturne_desktop")[0] + "import urllib.request\n" \
        "urllib.request.urlopen('http://127.0.0.1:9/')\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode != 0 and "network blocked" in out.stderr


REFERENCE = r"""
import json, logging, numpy as np
from wordllama import WordLlama
from nocturne_desktop.core.embedder import WordLlamaEmbedder, package_folder
texts = ["Maya works as a nurse at Southmead Hospital.", "Zoé moved to Porto 🎉 last spring!",
         "What does she do for a living?", "x" * 3000]
ref = WordLlama.load(cache_dir=package_folder(), disable_download=True).embed(texts, norm=True)
ours = WordLlamaEmbedder().embed(texts)
print(json.dumps(float(np.abs(ref - ours).max())))
"""


def test_the_vectors_are_those_of_wordllamas_own_loader() -> None:
    """Its own loader, given the package's folder as the cache with downloads disabled, is the
    reference (run apart: it configures the root logger when imported)."""
    out = subprocess.run([sys.executable, "-c", REFERENCE], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) < 1e-5


@pytest.fixture(scope="module")
def model() -> emb.WordLlamaEmbedder:
    e = emb.default_embedder()
    assert e is not None, emb.load_error()
    return e


@pytest.mark.parametrize(("question", "fact", "small_talk"), [
    ("What does she do for a living?", "Maya works as a nurse at Southmead Hospital.",
     "Maya had soup for lunch on Saturday."),
    ("Which pet did he adopt?", "Daniel took home a tabby cat from the shelter.",
     "Daniel's train was late on Monday morning."),
    ("What vehicle does she own?", "Maya drives a blue Fiat Panda.",
     "Maya made a cup of tea on Friday."),
    ("Where does the user live?", "The user moved to Porto.", "The user had a headache."),
])
def test_a_paraphrase_lies_nearer_its_fact_than_small_talk(
    model: emb.WordLlamaEmbedder, question: str, fact: str, small_talk: str
) -> None:
    q, f, s = model.embed([question, fact, small_talk])
    assert q @ f > q @ s + 0.05


def test_a_text_without_tokens_embeds_as_zeros_and_an_empty_batch_as_nothing(
    model: emb.WordLlamaEmbedder,
) -> None:
    v = model.embed(["", "Maya runs."])
    assert not v[0].any() and abs(float(v[1] @ v[1]) - 1.0) < 1e-5
    assert model.embed([]).shape == (0, 256)


def test_the_embedder_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(emb.ENV, "off")
    assert emb.default_embedder() is None
    monkeypatch.setenv(emb.ENV, "")
    assert emb.default_embedder() is not None


def test_a_missing_package_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        emb.WordLlamaEmbedder(folder=tmp_path)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
@pytest.mark.parametrize(("chosen", "threads"), [(None, 1), ("2", 2)], ids=["default", "chosen"])
def test_numpy_loads_with_one_blas_thread_unless_one_was_chosen(
    chosen: str | None, threads: int
) -> None:
    """A spare BLAS thread spin-waits after every ranking's product, taking a core from the
    GUI and the SQL: the package asks OpenBLAS for one thread before numpy loads."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if chosen:
        env["OPENBLAS_NUM_THREADS"] = chosen
    code = ("import os, nocturne_desktop.core.store, numpy\n"
            "print(len(os.listdir('/proc/self/task')), os.environ['OPENBLAS_NUM_THREADS'])")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    assert out == [str(threads), chosen or "1"]
