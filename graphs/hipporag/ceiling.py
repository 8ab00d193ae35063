"""HippoRAG's evidence ceiling: none without the model. Which passages PPR ranks first depends on
the triples an index-time LLM extracts (the graph's edges) and on the facts a question-time call
keeps, so no LLM-free rule bounds it; the rule says so instead of guessing."""

from __future__ import annotations

from longctx.graphs.plugin.api import NeedsIndexLLM

#: Why the rule does not apply.
NEEDS_INDEX_LLM = (
    "needs the index-time LLM: the passages are ranked over a graph of the triples a model extracts"
)

#: HippoRAG's ceiling rule, on its registration.
HIPPORAG_CEILING = NeedsIndexLLM(rank=95, reason=NEEDS_INDEX_LLM)
