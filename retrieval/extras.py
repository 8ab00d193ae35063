"""Optional dependencies: a package that an extra installs, imported, or an error naming the extra.

The core install (``pip install longctx``) answers with an OpenAI-compatible server and BM25.
Dense retrieval, the embedded model, RAPTOR's clustering, PDF/HTML readers and plots come with
extras (``pyproject.toml``, docs/install.md; ``tests/test_core_install.py`` checks that every
extra a call names exists there). Where a feature needs one of their packages,
:func:`require` imports it, or raises :class:`MissingExtraError` with the one-line install command.
This module sits at the bottom of the import graph with the contract, so every package may use it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from retrieval.errors import LongctxError


class MissingExtraError(LongctxError, ImportError):
    """A feature needs a package that the core install leaves out; the message names the extra that installs it."""


def install_hint(extra: str) -> str:
    """The command that installs ``extra``, one of ``pyproject.toml``'s (``pip install 'longctx[dense]'``)."""
    return f"pip install 'longctx[{extra}]'"


def require(module: str, *, extra: str, feature: str | None = None) -> ModuleType:
    """``module`` imported, for a ``feature`` that needs the optional ``extra``.

    Raises:
        MissingExtraError: ``module``, or a package it imports, is not installed; the message
            gives the install command. A module that is installed but fails to load raises as it is.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise MissingExtraError(
            f"{feature or module} needs {exc.name or module!r}, which the core install leaves out: {install_hint(extra)}"
        ) from exc
