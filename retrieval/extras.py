"""Optional dependencies: a package that an extra installs, imported, or an error naming the extra.

The core install (``pip install longctx``) answers with an OpenAI-compatible server and BM25.
Dense retrieval, the embedded model, RAPTOR's clustering, PDF/HTML readers and plots come with
extras (``pyproject.toml``, docs/install.md). Where a feature needs one of their packages,
:func:`require` imports it, or raises :class:`MissingExtraError` with the one-line install command.
This module sits at the bottom of the import graph with the contract, so every package may use it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: What each extra of ``pyproject.toml`` adds (its packages are listed there).
EXTRAS = {
    "dense": "dense retrieval and local reranking (sentence-transformers, torch, FAISS, ONNX Runtime)",
    "embedded": "the embedded local model (llama-cpp-python and SmolLM2)",
    "raptor": "RAPTOR's clustering (UMAP, scikit-learn), with the dense extra",
    "readers": "PDF and HTML files (LlamaIndex's file readers, pypdf, BeautifulSoup)",
    "llamaindex": "the LlamaIndex retriever adapter (llama-index-core)",
    "hf": "local Hugging Face tokenizers (transformers)",
    "plots": "the report's PNG plots (matplotlib)",
    "parquet": "benchmark files in Parquet (pyarrow)",
    "babilong": "the BABILong generator's sentence splitter (nltk)",
}


class MissingExtraError(ImportError):
    """A feature needs a package that the core install leaves out; the message names the extra that installs it."""


def install_hint(extra: str) -> str:
    """The command that installs ``extra`` (``pip install 'longctx[dense]'``)."""
    if extra not in EXTRAS:
        raise KeyError(f"unknown extra {extra!r}; the extras are {', '.join(EXTRAS)}")
    return f"pip install 'longctx[{extra}]'"


def require(module: str, *, extra: str, feature: str | None = None) -> ModuleType:
    """``module`` imported, for a ``feature`` that needs the optional ``extra``.

    Raises:
        MissingExtraError: ``module``, or a package it imports, is not installed; the message
            gives the install command. A module that is installed but fails to load raises as it is.
    """
    hint = install_hint(extra)  # an unknown extra fails here, not only on a machine that misses it
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise MissingExtraError(f"{feature or module} needs {exc.name or module!r}, which the core install leaves out: {hint}") from exc
