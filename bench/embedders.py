"""Embedding models measured against the one the app ships (bench only, not dependencies).

``tokenlearn``: ``tokenlearn-static-model`` (a Model2Vec-style static model, 10,000 tokens x 64
dimensions in int8, weights inside its wheel, a Rust encoder). Install it by hand to measure it:
``pip install tokenlearn-static-model``.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray


class TokenlearnEmbedder:
    """:class:`~nocturne_desktop.core.ports.Embedder` over ``static_model.get_embeddings``."""

    def __init__(self) -> None:
        from static_model import get_embeddings

        self._get = get_embeddings
        self._name = f"tokenlearn-static-model-{importlib.metadata.version('tokenlearn-static-model')}"
        self._dim = len(get_embeddings(["probe"])[0])

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        out = np.asarray(self._get([t or " " for t in texts]), dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


def by_name(name: str) -> object:
    """``wordllama`` (the app's, the store's default) or ``tokenlearn``."""
    if name == "wordllama":
        from nocturne_desktop.core.store.vectors import DEFAULT_EMBEDDER

        return DEFAULT_EMBEDDER
    if name == "tokenlearn":
        return TokenlearnEmbedder()
    raise ValueError(f"unknown embedder {name!r}: wordllama or tokenlearn")
