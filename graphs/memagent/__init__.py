"""MemAgent: the whole corpus streamed through a bounded, overwritten memory (batched,
resumable)."""

from longctx.graphs.memagent.answer_extraction import extract_answer
from longctx.graphs.memagent.config import MemAgentConfig
from longctx.graphs.memagent.graph import build_graph, collect, initial_state, prepare_context
from longctx.graphs.memagent.prompts import (
    DEFAULT_FINAL_INSTRUCTION,
    FINAL_TEMPLATE,
    MEMORY_TEMPLATE,
    PROMPTS_VERSION,
)
from longctx.graphs.memagent.stream import split_stream

__all__ = [
    "DEFAULT_FINAL_INSTRUCTION",
    "FINAL_TEMPLATE",
    "MEMORY_TEMPLATE",
    "PROMPTS_VERSION",
    "MemAgentConfig",
    "build_graph",
    "collect",
    "extract_answer",
    "initial_state",
    "prepare_context",
    "split_stream",
]
