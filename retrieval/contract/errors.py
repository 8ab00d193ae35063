"""The errors the library raises for its users: one base, :class:`LongctxError`, and a
class per kind.

    from longctx import LongctxError, answer
    try:
        result = answer(corpus, question, strategy="rag")
    except LongctxError as exc:  # a budget, an option, a missing extra, a model server, the data
        print(exc)                 # one line that says what to change

The kinds: :class:`ConfigError` (an option or argument; :class:`OptionError` an unknown or mistyped
one, :class:`UnknownName` a strategy, retriever, preset or dataset no entry has), ``BudgetExceeded``
(:mod:`longctx.graphs.metering.budget`), ``MissingExtraError`` (:mod:`longctx.retrieval.extras`),
:class:`ModelError` (a chat, embedding or rerank model or its server: ``ChatModelError``,
``EmbedderError``, ``RerankError``, ``TokenizerError``) and :class:`DataError` (a corpus, benchmark
file, cache or price file: ``CorpusError``, ``BenchmarkDataError``...). Each keeps the built-in
class it was raised as before (``ConfigError`` is a ``ValueError``, an unknown name a ``KeyError``,
``MissingExtraError`` an ``ImportError``...), so an existing ``except`` still catches it.

Home: a contract module (standard library only) at the bottom of the import graph, so that every
package raises them.
"""

from __future__ import annotations


class LongctxError(Exception):
    """Base of every error the library raises for a user to act on; its message says
    what to change."""


class ConfigError(LongctxError, ValueError):
    """An option or argument has a value it cannot take."""


class OptionError(ConfigError, TypeError):
    """An option or argument the call does not take: an unknown name, or a value of
    the wrong type."""


class UnknownName(ConfigError, KeyError):
    """A name no entry has: a strategy, retriever, embedder, preset, benchmark or dataset."""

    def __str__(self) -> str:
        return Exception.__str__(self)  # the message, without the quotes a KeyError adds


class ModelError(LongctxError, RuntimeError):
    """A chat, embedding or rerank model cannot be used: it cannot be loaded, its server does not
    answer, or what it sends is not what was asked for."""


class DataError(LongctxError, ValueError):
    """Input data cannot be used: a corpus, a benchmark file, a cache file or a price table."""


__all__ = [
    "ConfigError",
    "DataError",
    "LongctxError",
    "ModelError",
    "OptionError",
    "UnknownName",
]
