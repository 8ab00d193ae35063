"""MemAgent: the whole corpus streamed through a bounded, overwritten memory (batched, resumable)."""

from graphs.memagent.config import MemAgentConfig
from graphs.memagent.graph import (
    build_graph,
    collect,
    extract_answer,
    initial_state,
    prepare_context,
    split_stream,
)
from graphs.memagent.prompts import (
    DEFAULT_FINAL_INSTRUCTION,
    FINAL_TEMPLATE,
    MEMORY_TEMPLATE,
    PROMPTS_VERSION,
)

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
