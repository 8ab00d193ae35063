"""The answer contract every package shares: corpus, question, answer, usage, steps, registry.

Home and why: the contract sits at the bottom of the import graph so that every package
may import it (``experiments -> agents -> graphs -> memory, retrieval``) and it imports
none of them. The top-level layout is fixed, so the bottom is ``retrieval``, the lowest
layer, which already owned ``Corpus``/``Document``.

Each part lives in a module with one job, all standard library only at import (the heavy
helpers a corpus uses, file readers and the tokenizer, load where they are needed):

- :mod:`longctx.retrieval.contract.registry`: ``Registry``, the plug-in registry of every kind;
- :mod:`longctx.retrieval.contract.document`: ``Document``, ``CorpusError``;
- :mod:`longctx.retrieval.contract.errors`: ``LongctxError``, the base of every error raised to
  users, and its kinds;
- :mod:`longctx.retrieval.contract.corpus`: ``Corpus``;
- :mod:`longctx.retrieval.contract.question`: ``Question``, ``Protocol``, ``as_question``;
- :mod:`longctx.retrieval.contract.answer`: ``Answer``, ``Evidence``, ``Usage``, ``Step``.

This module gathers them under one name, which is how the library and plug-ins import them
(``from longctx.retrieval.contract import Corpus, Question``). Each name loads its module on first
use (PEP 562), so a module that needs one part (``contract.registry``, as ``longctx --help`` does)
loads only that part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from longctx.retrieval.lazy import lazy_attributes

if TYPE_CHECKING:  # the lazy names below, for type checkers (nothing is imported at run time)
    from longctx.retrieval.contract.answer import Answer, Evidence, Step, Usage
    from longctx.retrieval.contract.corpus import Corpus
    from longctx.retrieval.contract.document import CorpusError, Document
    from longctx.retrieval.contract.errors import ConfigError, DataError, LongctxError, ModelError
    from longctx.retrieval.contract.question import Protocol, Question, as_question
    from longctx.retrieval.contract.registry import Registry

_HERE = "longctx.retrieval.contract"
#: Exported name -> the module that defines it.
_EXPORTS = {
    **dict.fromkeys(("Answer", "Evidence", "Step", "Usage"), f"{_HERE}.answer"),
    "Corpus": f"{_HERE}.corpus",
    **dict.fromkeys(("CorpusError", "Document"), f"{_HERE}.document"),
    **dict.fromkeys(("ConfigError", "DataError", "LongctxError", "ModelError"), f"{_HERE}.errors"),
    **dict.fromkeys(("Protocol", "Question", "as_question"), f"{_HERE}.question"),
    "Registry": f"{_HERE}.registry",
}

__all__ = [
    "Answer",
    "ConfigError",
    "Corpus",
    "CorpusError",
    "DataError",
    "Document",
    "Evidence",
    "LongctxError",
    "ModelError",
    "Protocol",
    "Question",
    "Registry",
    "Step",
    "Usage",
    "as_question",
]

__getattr__, __dir__ = lazy_attributes(_HERE, _EXPORTS, globals())
