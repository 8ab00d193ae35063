"""Self-Ask (Press et al. 2023), retrieval-backed, in two variants (``SelfAskConfig.variant``).

``flashrag`` (the default) runs as FlashRAG's ``SelfAskPipeline.run_item``: the question
is retrieved for once and its top-k go into the prompt as ``Context{i}:`` lines. Each
generator call continues the transcript; its stop sequences alternate between
``Intermediate answer:`` (the call writes a follow-up question) and ``Follow up:`` (the
call writes the intermediate answer itself, from the contexts), both with ``Context:``
and ``#``. A follow-up is retrieved for and its top-k replace the contexts of the next
call. The loop ends when a call writes "So the final answer is: ", when the transcript
is still empty after a call, or after ``max_iterations`` generator calls; the answer is
parsed from the transcript's first "So the final answer is: " line, and is empty when
there is none (no forced final call). ``docs/self_ask.md`` lists what we do differently.

Graph (flashrag)::

    START -> retrieve -> generate --follow up--> retrieve_follow_up -> generate
                         generate --neither--> generate
                         generate --final answer / empty / cap--> finish -> END

``reader`` is the project's earlier algorithm: the model stops before every
intermediate answer; each follow-up is retrieved for and a reader call answers it from
those chunks alone; after ``max_iterations`` follow-ups the final-answer cue is appended
and the model completes it; if that is empty, the last intermediate answer stands in.

Graph (reader)::

    START -> ask --follow up--> retrieve_follow_up -> answer_follow_up -> ask
             ask --final answer--> finish -> END
             ask --no follow up / cap reached--> force_final -> finish

In both, ``raw`` and ``answer`` are the parsed final answer (what a benchmark scores);
the transcript is kept in the ``finish`` step.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from longctx.graphs.plugin.api import STRATEGIES, CompiledGraph, StrategyContext, StrategyCosts
from longctx.graphs.self_ask.ceiling import FollowUpCeiling
from longctx.graphs.self_ask.config import SelfAskConfig
from longctx.graphs.self_ask.cost_model import self_ask_costs
from longctx.graphs.self_ask.flashrag import after_generate, finish_flashrag, generate
from longctx.graphs.self_ask.presentation import PRESENTATION
from longctx.graphs.self_ask.prompts import PROMPTS_VERSION
from longctx.graphs.self_ask.reader import (
    after_ask,
    answer_follow_up,
    ask,
    finish_reader,
    force_final,
)
from longctx.graphs.self_ask.retrieve import retrieve, retrieve_follow_up
from longctx.graphs.self_ask.state import SelfAskState


@STRATEGIES.register(
    "self_ask",
    costs=StrategyCosts(self_ask_costs, always_bounded=True),
    ceiling=FollowUpCeiling(rank=30, retrieve_follow_up=retrieve_follow_up),
    config_cls=SelfAskConfig,
    prompts_version=PROMPTS_VERSION,
    uses_index=True,
    presets={
        "paper": SelfAskConfig(),
        "reader": SelfAskConfig(variant="reader", chunk_size=300, top_k=5, max_new_tokens=128),
    },
    presentation=PRESENTATION,
    description=(
        "Self-Ask as FlashRAG runs it: the question's top-5 in the prompt, the model writes "
        "follow-ups and their answers, each follow-up re-retrieves; at most 5 generator calls "
        "(variant='reader': a reader answers each follow-up)."
    ),
)
def build_graph(config: SelfAskConfig | None = None) -> CompiledGraph:
    """The loop of ``config.variant`` (module docstring), with a recursion limit that fits the
    cap."""
    cfg = config or SelfAskConfig()
    graph = StateGraph(SelfAskState, context_schema=StrategyContext)
    if cfg.variant == "flashrag":
        graph.add_node("retrieve", retrieve)
        graph.add_node("generate", generate)
        graph.add_node("retrieve_follow_up", retrieve_follow_up)
        graph.add_node("finish", finish_flashrag)
        graph.add_edge(START, "retrieve")
        # FlashRAG: range(max_iter)
        graph.add_edge("retrieve", "generate" if cfg.max_iterations else "finish")
        graph.add_conditional_edges("generate", after_generate)
        graph.add_edge("retrieve_follow_up", "generate")
        limit = 2 * cfg.max_iterations + 10
    else:
        graph.add_node("ask", ask)
        graph.add_node("retrieve_follow_up", retrieve_follow_up)
        graph.add_node("answer_follow_up", answer_follow_up)
        graph.add_node("force_final", force_final)
        graph.add_node("finish", finish_reader)
        graph.add_edge(START, "ask")
        graph.add_conditional_edges("ask", after_ask)
        graph.add_edge("retrieve_follow_up", "answer_follow_up")
        graph.add_edge("answer_follow_up", "ask")
        graph.add_edge("force_final", "finish")
        limit = 3 * cfg.max_iterations + 10
    graph.add_edge("finish", END)
    return graph.compile(name="self_ask").with_config(recursion_limit=limit)
