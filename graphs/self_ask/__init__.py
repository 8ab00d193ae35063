"""Self-Ask (Press et al. 2023), retrieval-backed: FlashRAG's SelfAskPipeline by default, or the
reader variant.

Modules: ``state`` (the state, the stop cut), ``retrieve`` (the retrievals both variants share),
``flashrag`` and ``reader`` (each variant's nodes, prompt and parsing), ``cost_model``, ``graph``
(the wiring; registration).
"""

from longctx.graphs.self_ask.config import SelfAskConfig
from longctx.graphs.self_ask.flashrag import (
    FINAL_PREFIX,
    first_follow_up,
    flashrag_prompt,
    format_contexts,
    parse_final_answer,
)
from longctx.graphs.self_ask.graph import build_graph
from longctx.graphs.self_ask.prompts import PROMPTS_VERSION
from longctx.graphs.self_ask.reader import NOT_FOUND, clean_final, parse_step
from longctx.graphs.self_ask.state import cut_at_stops

__all__ = [
    "FINAL_PREFIX",
    "NOT_FOUND",
    "PROMPTS_VERSION",
    "SelfAskConfig",
    "build_graph",
    "clean_final",
    "cut_at_stops",
    "first_follow_up",
    "flashrag_prompt",
    "format_contexts",
    "parse_final_answer",
    "parse_step",
]
