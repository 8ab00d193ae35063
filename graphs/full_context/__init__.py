"""The full-context baseline: the whole corpus in one prompt, middle-truncated to the window."""

from longctx.graphs.full_context.config import FullContextConfig
from longctx.graphs.full_context.graph import (
    FullContextPrompt,
    build_graph,
    full_context_prompt,
    input_budget,
    prepare_corpus,
    untruncated_prompt,
)
from longctx.graphs.full_context.prompts import FULL_CONTEXT_TEMPLATE, PROMPTS_VERSION
from longctx.graphs.full_context.truncation import truncate_prompt, truncation_cut

__all__ = [
    "FULL_CONTEXT_TEMPLATE",
    "PROMPTS_VERSION",
    "FullContextConfig",
    "FullContextPrompt",
    "build_graph",
    "full_context_prompt",
    "input_budget",
    "prepare_corpus",
    "truncate_prompt",
    "truncation_cut",
    "untruncated_prompt",
]
