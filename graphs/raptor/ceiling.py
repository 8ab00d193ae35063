"""RAPTOR's evidence ceiling: none without the model. Which nodes the collapsed tree retrieves
depends on the summaries the index-time LLM writes (they are ranked with the leaves), so no
LLM-free rule bounds it; the rule says so instead of guessing."""

from __future__ import annotations

from longctx.graphs.plugin.api import NeedsIndexLLM

#: Why the rule does not apply.
NEEDS_INDEX_LLM = (
    "needs the index-time LLM: the retrieved nodes are ranked among the tree's summaries, which "
    "a model writes"
)

#: RAPTOR's ceiling rule, on its registration.
RAPTOR_CEILING = NeedsIndexLLM(rank=90, reason=NEEDS_INDEX_LLM)
