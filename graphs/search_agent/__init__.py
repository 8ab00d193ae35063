"""BrowseComp-Plus's search agent (texttron/BrowseComp-Plus @ 97c637c): ``search`` and
``get_document`` tool calls over any of our retrievers until the model answers."""

from longctx.graphs.search_agent.config import SearchAgentConfig
from longctx.graphs.search_agent.graph import (
    SearchAgentState,
    build_graph,
    cited_docids,
    exact_answer,
)
from longctx.graphs.search_agent.prompts import PROMPTS_VERSION, QUERY_TEMPLATES, format_query
from longctx.graphs.search_agent.tools import CorpusSearcher, SearchTools

__all__ = [
    "PROMPTS_VERSION",
    "QUERY_TEMPLATES",
    "CorpusSearcher",
    "SearchAgentConfig",
    "SearchAgentState",
    "SearchTools",
    "build_graph",
    "cited_docids",
    "exact_answer",
    "format_query",
]
