"""Structured corpus analysis (issue 15): the CorpusQA recipe (seed 004) run as a reader.

Modules: ``config`` (settings), ``prompts`` (templates), ``schema`` (table schema and
record validators), ``extract`` (validated Plan/Map calls, windows), ``normalize``
(numbers, units, periods), ``cache`` (records on disk per document, schema and model),
``database`` (Reduce into SQLite, safe Query), ``graph`` (nodes and registration).
"""

from graphs.structured.config import StructuredConfig
from graphs.structured.graph import build_graph
from graphs.structured.prompts import PROMPTS_VERSION
from graphs.structured.schema import Attribute, TableSchema, TimeDimension

__all__ = ["PROMPTS_VERSION", "Attribute", "StructuredConfig", "TableSchema", "TimeDimension", "build_graph"]
