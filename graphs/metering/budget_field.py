"""Which Chat Completions field carries the answer budget, and the call arguments that send it
there.

Every OpenAI-compatible server honours ``max_tokens``; llama-cpp-python's server (0.3.x)
ignores ``max_completion_tokens`` and generates to the end of its window. OpenAI's reasoning
models take only ``max_completion_tokens``. LangChain's ``ChatOpenAI`` renames every budget to
``max_completion_tokens``. Our own OpenAI model (``longctx.agents.openai_chat.RetryingChatOpenAI``)
rewrites its request body with :func:`with_budget_field`; a ``ChatOpenAI`` the user built and
passed as ``llm=`` gets the same rule through :func:`budget_kwargs`, which every call site that
sends a budget uses (``longctx.graphs.calls.llm.complete_with_usage``, PAI's and the structured
strategy's calls, the speed calibration).

Why per-call arguments, and not a converted model at the entry where ``llm=`` is accepted: a
copy of the user's model as our subclass would duplicate its clients and secrets and drop
overrides of the user's own subclass, and a ``RunnableBinding`` is no ``BaseChatModel``
(no ``get_num_tokens``, ``bind_tools``, ``model_copy``). Call arguments are LangChain's public
interface: the user's instance stays the one called, traced and cached, the budget rides in
``extra_body`` (which the openai SDK merges into the JSON body), and the arguments enter the
LLM-cache key, so a reply cached while the budget went out as ``max_completion_tokens`` is not
replayed. The module imports nothing of ``langchain_openai``: a model is recognised by its
class names.
"""

from __future__ import annotations

import re
from typing import Any

#: The two names of the answer budget in a Chat Completions body.
BUDGET_FIELDS = ("max_tokens", "max_completion_tokens")
#: OpenAI's reasoning models (o1, o3, o4-mini, the gpt-5 family), which reject ``max_tokens``
#: and take only ``max_completion_tokens`` (OpenAI's Chat Completions reference).
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)", re.IGNORECASE)
#: Set to ``True`` on a ``ChatOpenAI`` subclass that applies :func:`with_budget_field` to its own
#: request body (``RetryingChatOpenAI``): :func:`budget_kwargs` leaves it the plain ``max_tokens``.
APPLIES_BUDGET_FIELD = "applies_budget_field"


def budget_field(model: str | None) -> str:
    """The Chat Completions field that carries the answer budget for ``model``.

    ``max_tokens`` for every model but OpenAI's reasoning models: it is what the official
    benchmark scripts send and what vLLM, llama.cpp's server, Ollama and OpenAI's chat
    models honour; llama-cpp-python's server (0.3.x) ignores ``max_completion_tokens`` and
    generates to the end of its window. ``max_completion_tokens`` for the o-series and the
    gpt-5 family, which reject ``max_tokens``.
    """
    return (
        "max_completion_tokens" if _REASONING_MODEL.match((model or "").strip()) else "max_tokens"
    )


def with_budget_field(payload: dict[str, Any], model: str | None) -> dict[str, Any]:
    """``payload`` with its answer budget (under either name) sent as :func:`budget_field` says; in
    place."""
    present = [key for key in BUDGET_FIELDS if key in payload]
    if present:
        # ChatOpenAI's own rename leaves only max_completion_tokens
        value = payload.pop(present[-1])
        for key in present[:-1]:
            payload.pop(key)
        payload[budget_field(model)] = value
    return payload


def budget_kwargs(llm: Any, max_tokens: int) -> dict[str, Any]:
    """The call keyword arguments that send the answer budget ``max_tokens`` to ``llm`` under
    :func:`budget_field`'s field.

    ``{"max_tokens": max_tokens}`` for every model but a ``ChatOpenAI`` (or a subclass not of
    ours) on Chat Completions for a model that takes ``max_tokens``: LangChain would rename that
    argument to ``max_completion_tokens``, so it goes in ``extra_body`` instead, on top of the
    model's own ``extra_body`` (a per-call ``extra_body`` replaces the model's, so theirs is
    merged in). A budget set on the model itself (``ChatOpenAI(max_tokens=...)``, sent as
    ``max_completion_tokens``) is overridden for the call as any per-call budget overrides it:
    sent as ``null``, which servers read as unset.

    ``AzureChatOpenAI`` and the other ``BaseChatOpenAI`` classes (DeepSeek, xAI, ...) are left
    alone: they send a per-call ``max_tokens`` as it is, and an Azure deployment's name need
    not say which model it serves, so the name rule could send ``max_tokens`` to a reasoning
    deployment, which rejects it. A model on the Responses API is left alone too: LangChain
    sends its budget as ``max_output_tokens``, and that API knows no ``max_tokens``.
    """
    if (
        not _renames_budget(type(llm))
        or budget_field(getattr(llm, "model_name", None)) != "max_tokens"
    ):
        return {"max_tokens": max_tokens}
    uses_responses_api = getattr(llm, "_use_responses_api", None)
    if callable(uses_responses_api) and uses_responses_api(
        dict(getattr(llm, "model_kwargs", None) or {})
    ):
        return {"max_tokens": max_tokens}
    kwargs: dict[str, Any] = {
        "extra_body": {**(getattr(llm, "extra_body", None) or {}), "max_tokens": max_tokens}
    }
    if getattr(llm, "max_tokens", None) is not None:
        kwargs["max_completion_tokens"] = None
    return kwargs


_RENAMES: dict[type, bool] = {}  # per model class: the answer is asked on every call


def _renames_budget(cls: type) -> bool:
    """Whether ``cls`` is LangChain's ``ChatOpenAI`` or a subclass that does not apply
    :func:`with_budget_field` itself."""
    found = _RENAMES.get(cls)
    if found is None:
        is_chat_openai = any(
            c.__name__ == "ChatOpenAI" and c.__module__.startswith("langchain_openai")
            for c in cls.__mro__
        )
        found = _RENAMES[cls] = is_chat_openai and not getattr(cls, APPLIES_BUDGET_FIELD, False)
    return found
