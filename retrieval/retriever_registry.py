"""The retriever registry object, importable without the retrieval engines: names and lazy targets.

The built-in retrievers are declared in ``retrieval/plugin.toml``
(``bm25 = "longctx.retrieval.retrievers:bm25"``) and registered where they are defined
(``@RETRIEVERS.register("bm25")`` in :mod:`longctx.retrieval.retrievers`), so
``longctx --retriever`` offers them without importing numpy or an engine; third parties add to the
``longctx.retrievers`` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from longctx.retrieval.contract.registry import Registry

if TYPE_CHECKING:
    from longctx.retrieval.base import Retriever

#: name -> factory taking the retriever's options.
RETRIEVERS: Registry[Callable[..., Retriever]] = Registry(
    "retriever", group="longctx.retrievers", packages=("longctx.retrieval",)
)
