"""The answer contract every package shares: corpus, question, answer, usage, steps, registry.

Home and why: the contract sits at the bottom of the import graph so that every package
may import it (``experiments -> agents -> graphs -> memory, retrieval``) and it imports
none of them. The top-level layout is fixed, so the bottom is ``retrieval``, the lowest
layer, which already owned ``Corpus``/``Document``.

Each part lives in a module with one job, all standard library only at import (the heavy
helpers a corpus uses, file readers and the tokenizer, load where they are needed):

- :mod:`retrieval.registry`: ``Registry``, the plug-in registry of every kind;
- :mod:`retrieval.document`: ``Document``, ``CorpusError``;
- :mod:`retrieval.errors`: ``LongctxError``, the base of every error raised to users, and its kinds;
- :mod:`retrieval.corpus`: ``Corpus``;
- :mod:`retrieval.question`: ``Question``, ``Protocol``, ``as_question``;
- :mod:`retrieval.answer`: ``Answer``, ``Evidence``, ``Usage``, ``Step``.

This module gathers them under one name, which is how the library and plug-ins import them
(``from retrieval.contract import Corpus, Question``); ``import retrieval.contract`` stays cheap.
"""

from __future__ import annotations

from retrieval.answer import Answer, Evidence, Step, Usage
from retrieval.corpus import Corpus
from retrieval.document import CorpusError, Document
from retrieval.errors import ConfigError, DataError, LongctxError, ModelError
from retrieval.question import Protocol, Question, as_question
from retrieval.registry import Registry

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
