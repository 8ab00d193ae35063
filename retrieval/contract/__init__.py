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
(``from longctx.retrieval.contract import Corpus, Question``); ``import longctx.retrieval.contract``
stays cheap.
"""

from __future__ import annotations

from longctx.retrieval.contract.answer import Answer, Evidence, Step, Usage
from longctx.retrieval.contract.corpus import Corpus
from longctx.retrieval.contract.document import CorpusError, Document
from longctx.retrieval.contract.errors import ConfigError, DataError, LongctxError, ModelError
from longctx.retrieval.contract.question import Protocol, Question, as_question
from longctx.retrieval.contract.registry import Registry

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
