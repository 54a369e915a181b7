"""The embedding model behind the meaning-aware ranking: WordLlama's static token vectors.

WordLlama (MIT) ships its weights (a 32,000-token vocabulary, 256 dimensions, float16) and its
tokenizer inside the ``wordllama`` wheel. They are read here from the package's own folder, with
``safetensors`` and ``tokenizers``, and nothing else of the package is imported: its loader
looks for the tokenizer in another folder than the one it ships in and falls back to a
download, and its inference module configures the root logger on import. A sentence's vector
is the mean of its tokens' rows, scaled to unit length - what ``WordLlama.embed(norm=True)``
computes (a test holds the two equal).

Why in the core: every door that writes a fact's text embeds it (the store's write path, in any
thread or worker process), so the store must find the model without the window wiring it. It
is arithmetic on arrays (numpy) and a tokenizer reading a file from a wheel: no network, no Qt.

:func:`default_embedder` loads it once per process; it answers None (and the store ranks by
words alone) when the package is missing or unreadable, or when ``NOCTURNE_EMBEDDER=off``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

log = logging.getLogger(__name__)

PACKAGE = "wordllama"
WEIGHTS = "weights/l2_supercat_256.safetensors"
TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
TENSOR = "embedding.weight"
ENV = "NOCTURNE_EMBEDDER"
"""``off`` (or ``0``, ``none``): no embedder; the store ranks by words alone."""


def package_folder() -> Path | None:
    """Where the ``wordllama`` package is installed, without importing it (in the packaged app:
    the folder its two files are bundled in, see nocturne.spec)."""
    bundle = getattr(sys, "_MEIPASS", None)
    if getattr(sys, "frozen", False) and bundle:
        return Path(bundle) / PACKAGE
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


class WordLlamaEmbedder:
    """:class:`~nocturne_desktop.core.ports.Embedder` over the files in the wordllama wheel.

    Thread-safe after construction (the weights are read-only; the tokenizer is only asked to
    encode). Tokenizing runs on the calling thread (``TOKENIZERS_PARALLELISM=false``): the
    batches are small, and a thread pool would warn in a forked worker."""

    def __init__(self, folder: Path | None = None) -> None:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        root = folder if folder is not None else package_folder()
        if root is None:
            raise FileNotFoundError(f"the {PACKAGE} package is not installed")
        weights = load_file(str(root / WEIGHTS))[TENSOR]
        self._rows: NDArray[np.float32] = np.ascontiguousarray(weights, dtype=np.float32)
        self._tokenizer: Any = Tokenizer.from_file(str(root / TOKENIZER))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        try:
            version = importlib.metadata.version(PACKAGE)
        except importlib.metadata.PackageNotFoundError:  # frozen without its metadata
            version = "?"
        self._name = f"{PACKAGE}-{version}/{Path(WEIGHTS).stem}"

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return int(self._rows.shape[1])

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encoded = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        ids = [e.ids for e in encoded]
        counts = np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(ids))
        if not counts.any():
            return out
        flat = np.fromiter((t for i in ids for t in i), dtype=np.int64, count=int(counts.sum()))
        np.clip(flat, 0, self._rows.shape[0] - 1, out=flat)
        have = counts > 0
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))[have]
        sums = np.add.reduceat(self._rows[flat], starts, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        out[have] = sums / np.maximum(norms, 1e-12)
        return out


_lock = threading.Lock()
_loaded: list[WordLlamaEmbedder | None] = []
_error: list[str] = []


def default_embedder() -> WordLlamaEmbedder | None:
    """The process's embedder, loaded on first use (None: unavailable, see the module doc)."""
    if os.environ.get(ENV, "").strip().lower() in ("off", "0", "none", "false"):
        return None
    with _lock:
        if not _loaded:
            try:
                _loaded.append(WordLlamaEmbedder())
            except Exception as exc:  # a missing or damaged package: rank by words alone
                _error.append(f"{type(exc).__name__}: {exc}")
                log.warning("the embedding model is unavailable (%s); memory is ranked by its "
                            "words alone", _error[-1])
                _loaded.append(None)
        return _loaded[0]


def load_error() -> str | None:
    """Why :func:`default_embedder` answered None (None: it loaded, or was not asked yet)."""
    return _error[-1] if _error else None
