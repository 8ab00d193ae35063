"""Structured corpus analysis (issue 15): the CorpusQA recipe (seed 004) run as a reader.

Modules: ``config`` (settings), ``prompts`` (templates), ``functions`` (the Plan and Map
functions and their validators), ``extract`` (reply parsing, windows, quotes), ``mapping``
(one document's extraction), ``flight`` (one extraction per document at a time), ``plan``
and ``query`` (nodes), ``state``, ``stores`` (where records and schemas are kept),
``cost_model``, ``graph`` (the Map-Reduce nodes, wiring and registration). The table schema,
value normalisation, the record cache, the reduced table and the SQL engine with its guards
are :mod:`longctx.memory.records`.
"""

from longctx.graphs.plugin.api import Attribute, TableSchema, TimeDimension
from longctx.graphs.structured.config import StructuredConfig
from longctx.graphs.structured.graph import build_graph
from longctx.graphs.structured.prompts import PROMPTS_VERSION

__all__ = [
    "PROMPTS_VERSION",
    "Attribute",
    "StructuredConfig",
    "TableSchema",
    "TimeDimension",
    "build_graph",
]
