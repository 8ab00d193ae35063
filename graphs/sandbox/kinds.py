"""Which REPL a config name opens: ``"sandbox"`` (the jailed worker, the default) or
``"unsafe_inprocess"`` (``exec`` in this process; its name says what it is)."""

from __future__ import annotations

import importlib
from typing import Literal, cast

from longctx.graphs.sandbox.protocol import ReplFactory

ReplKind = Literal["sandbox", "unsafe_inprocess"]

#: The factory behind each name, as ``module:attribute`` (imported on first use).
TARGETS: dict[str, str] = {
    "sandbox": "longctx.graphs.sandbox.jail:open_jailed_repl",
    "unsafe_inprocess": "longctx.graphs.sandbox.unsafe_inprocess:open_unsafe_inprocess_repl",
}


def repl_factory(kind: str) -> ReplFactory:
    """The :class:`ReplFactory` named ``kind``; a ``ValueError`` names the kinds there are."""
    if kind not in TARGETS:
        raise ValueError(f"unknown REPL kind {kind!r}; one of {sorted(TARGETS)}")
    module, attribute = TARGETS[kind].split(":")
    return cast(ReplFactory, getattr(importlib.import_module(module), attribute))
