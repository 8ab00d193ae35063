"""Optional dependencies: a package that an extra installs, imported, or an error naming the extra.

The core install (``pip install longctx-lab``) answers with an OpenAI-compatible server and BM25.
Dense retrieval, the embedded model, RAPTOR's clustering, PDF/HTML readers and plots come with
extras (``pyproject.toml``, docs/install.md; ``tests/test_core_install.py`` checks that every
extra a call names exists there). Where a feature needs one of their packages,
:func:`require` imports it, or raises :class:`MissingExtraError` with the one-line install command.
This module sits at the bottom of the import graph with the contract, so every package may use it.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType

from longctx.retrieval.contract.errors import LongctxError

#: The distribution's name on the package index (its import name is ``longctx``; ``longctx`` there
#: is another project's distribution, so installing it would not install this library).
DISTRIBUTION = "longctx-lab"


class MissingExtraError(LongctxError, ImportError):
    """A feature needs a package that the core install leaves out; the message names the extra that
    installs it."""


def install_hint(extra: str) -> str:
    """The command that installs ``extra``, one of ``pyproject.toml``'s
    (``pip install 'longctx-lab[dense]'``)."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


@dataclass(frozen=True)
class Need:
    """A package that a feature needs and the extra that installs it
    (``Need("igraph", "hipporag", "HippoRAG's PageRank")``)."""

    module: str
    extra: str
    feature: str


def installed(module: str) -> bool:
    """Whether ``module`` is found on the import path (located, not imported: numba-heavy
    packages take seconds to import, and a check runs before every run)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require_all(needs: Iterable[Need], *, who: str) -> None:
    """Check every package ``who`` will need before it does any work, and name every missing one
    and its extra in one message (a run that stops at the second missing extra after paying for
    model calls, then at a third, is what this prevents).

    Raises:
        MissingExtraError: One or more are not installed; the message gives one install
            command for all.
    """
    missing = [n for n in dict.fromkeys(needs) if not installed(n.module)]
    if missing:
        extras = ",".join(dict.fromkeys(n.extra for n in missing))
        names = ", ".join(f"{n.module!r} ({n.feature}, extra {n.extra!r})" for n in missing)
        raise MissingExtraError(
            f"{who} needs {names}, which the core install leaves out: {install_hint(extras)}"
        )


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
            f"{feature or module} needs {exc.name or module!r}, which the core install leaves "
            f"out: {install_hint(extra)}"
        ) from exc
