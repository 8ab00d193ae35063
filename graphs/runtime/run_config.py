"""What a run carries to LangChain and records with its answers: callbacks, trace tags and the
effective config."""

from __future__ import annotations

import dataclasses
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager, Callbacks
from langchain_core.language_models import BaseChatModel

from longctx.graphs.calls.llm import model_id, tokenizer_for, tokenizer_id
from longctx.graphs.calls.request_settings import settings_digest
from longctx.graphs.metering.budget import Budget
from longctx.graphs.metering.budget_guard import BudgetGuard
from longctx.graphs.plugin.config import ConfigT, redact_secrets
from longctx.graphs.plugin.registry import Strategy
from longctx.graphs.prompts import PROMPTS_VERSION as SHARED_PROMPTS_VERSION
from longctx.retrieval.contract import Question


def effective_config(
    spec: Strategy[ConfigT], cfg: ConfigT, llm: BaseChatModel, preset: str | None
) -> dict[str, Any]:
    """What ran, as recorded with each answer: strategy, preset, model, a digest of every setting
    its requests carry (``llm_settings``,
    :func:`longctx.graphs.calls.request_settings.settings_digest`), tokenizer, prompt versions and
    every config field (secrets redacted)."""
    return {
        "strategy": spec.name,
        "preset": preset,
        "llm": model_id(llm),
        "llm_settings": settings_digest(llm),
        "tokenizer": tokenizer_id(llm),
        "prompts_version": {spec.name: spec.prompts_version, "shared": SHARED_PROMPTS_VERSION},
        **redact_secrets(dataclasses.asdict(cfg)),
    }


def model_name(llm: BaseChatModel) -> str:
    """The model's name without its server address (which may carry credentials): for tags and
    trace metadata, which LangGraph also stores in checkpoints."""
    return model_id(llm).split(" @ ")[0]


def trace_tags(
    strategy: str, question: Question | None, llm: BaseChatModel | None = None
) -> list[str]:
    """LangSmith tags of a root run: the strategy, the model, and the benchmark, sample and run
    (``run_id`` in the question's metadata, set by the experiment runner) when known."""
    tags = [f"strategy:{strategy}"]
    if llm is not None:
        tags.append(f"model:{model_name(llm)}")
    for key, prefix in (("benchmark", "benchmark"), ("sample_id", "sample"), ("run_id", "run")):
        if question is not None and question.metadata.get(key) is not None:
            tags.append(f"{prefix}:{question.metadata[key]}")
    return tags


def with_handler(
    callbacks: Callbacks, handler: BaseCallbackHandler
) -> list[BaseCallbackHandler] | BaseCallbackManager:
    """``callbacks`` (None, a list, or a parent's callback manager) plus ``handler``."""
    if callbacks is None:
        return [handler]
    if isinstance(callbacks, BaseCallbackManager):
        manager = callbacks.copy()
        manager.add_handler(handler, inherit=True)
        return manager
    return [*callbacks, handler]


def with_budget(callbacks: Callbacks, budget: Budget | None, llm: BaseChatModel) -> Callbacks:
    """``callbacks`` plus a :class:`~graphs.metering.budget_guard.BudgetGuard` of ``budget`` (one
    for the whole call) when it sets a limit."""
    if budget is None or not budget.limited:
        return callbacks
    budget.check_priced()
    return with_handler(callbacks, BudgetGuard(budget, tokenizer_for(llm).count))
