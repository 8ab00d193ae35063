"""What the search agent costs before it runs: its bounds from the official limits, its typical
cost from the paper's search counts.

- **Least**: one call (the model answers without a tool), reading the question in its template;
  no retrieval.
- **Most**: ``max_iterations`` calls. Each reads the template and the tools, every reply so far
  (at most ``max_tokens`` output tokens in all: each request is capped at what is left) and every
  tool result so far. Tool calls are written in output tokens, so a conversation makes at most
  ``max_tokens`` of them, each returning at most the larger of a search (``k`` snippets of
  ``snippet_max_tokens``, or the longest document when snippets are whole) and a document (the
  longest), plus their JSON. A true bound (counted with cl100k, the default snippet tokenizer),
  and a loose one: the official agent bounds neither the calls of a turn nor a result's length.
- **Typical**: BrowseComp-Plus's Table 1 agents make 9-26 searches a question (gpt-5 23, o3 26,
  gpt-4.1 10, Sonnet 4 10): 10 searches, one a turn, then the answer.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from longctx.graphs.plugin.api import (
    PLACEHOLDER_QUESTION,
    SEAM_TOKENS,
    Calls,
    CorpusShape,
    Costs,
    ExpectedCost,
    Question,
    Retrievals,
    as_text_history,
    per_question_plan,
    prompt_tokens,
    reply_tokens,
    tool_schema_tokens,
    with_rerank,
)
from longctx.graphs.search_agent.config import SearchAgentConfig
from longctx.graphs.search_agent.prompts import format_query
from longctx.graphs.search_agent.tools import tool_definitions

#: Typical searches a question (BrowseComp-Plus Table 1: 9-26 for the API models).
TYPICAL_SEARCHES = 10
#: JSON around one search result (``{"docid": ..., "score": ..., "snippet": ...}``, indented)
#: and around a document, in tokens, a generous count.
RESULT_JSON_TOKENS = 40


def tools_tokens(cfg: SearchAgentConfig, llm: BaseChatModel | None) -> int:
    """What the tools add to every call, the larger of their two forms: the schemas (native tool
    calls) and the system text that describes them (a model without tool calls)."""
    tools = tool_definitions(cfg.k, cfg.get_document)
    schemas = sum(tool_schema_tokens("search_agent", t, llm) for t in tools)

    def described() -> str:
        return str(as_text_history([HumanMessage(content="")], tools)[0].content)

    key = f"tools-text:{cfg.k}:{cfg.get_document}"
    return max(schemas, prompt_tokens("search_agent", key, described, llm) + SEAM_TOKENS)


def result_tokens(cfg: SearchAgentConfig, shape: CorpusShape) -> tuple[int, int]:
    """Tokens of one search result at most and typically (a document's too, at most)."""
    longest = max(shape.token_counts, default=0)
    mean = shape.tokens / max(1, shape.documents)
    snippet = cfg.snippet_max_tokens or longest
    hits = min(cfg.k, max(1, shape.documents))
    most_search = hits * (min(snippet, longest) + RESULT_JSON_TOKENS)
    most = max(most_search, longest + RESULT_JSON_TOKENS) if cfg.get_document else most_search
    typical = hits * (min(snippet, mean) + RESULT_JSON_TOKENS)
    return most, math.ceil(typical)


def search_agent_costs(
    cfg: SearchAgentConfig,
    shape: CorpusShape,
    questions: Sequence[Question],
    *,
    llm: BaseChatModel | None = None,
    window: int | None = None,
) -> Costs:
    """The bounds (1 to ``max_iterations`` calls) and the typical run (10 searches, then the
    answer); see the module's doc."""
    qs = list(questions) or [PLACEHOLDER_QUESTION]
    template = cfg.query_template
    opening = [
        prompt_tokens(
            "search_agent",
            f"user:{template}",
            functools.partial(format_query, q.render(), template),
            llm,
            q,
        )
        for q in qs
    ]
    tools = tools_tokens(cfg, llm)
    most_result, typical_result = result_tokens(cfg, shape)
    calls_most = cfg.max_iterations
    per_call_most = max(opening) + tools + cfg.max_tokens + cfg.max_tokens * most_result
    bounds = per_question_plan(
        "search_agent",
        qs,
        calls=1,
        max_calls=calls_most,
        prompt_tokens=max(0, min(opening) - 2 * SEAM_TOKENS),
        max_prompt_tokens=calls_most * (per_call_most + 2 * SEAM_TOKENS),
        completion_tokens=cfg.max_tokens,
        formula="1 call (an answer at once) to max_iterations calls, each reading every result",
        tool_schema_tokens=tools,
    )
    turns = min(cfg.max_iterations, TYPICAL_SEARCHES + 1)
    reply = reply_tokens(cfg, "max_tokens")
    base = sum(opening) / len(opening) + tools
    prompt = sum(base + i * (typical_result + reply) for i in range(turns))
    found = Costs(bounds, ExpectedCost(Calls(turns, prompt, turns * reply)))
    searches = Retrievals(least=0, most=cfg.max_tokens, typical=turns - 1)
    return with_rerank(found, cfg, shape, qs, retrievals=searches, llm=llm)
