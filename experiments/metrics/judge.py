"""Calling an LLM judge through any LangChain chat model, with failures made explicit.

Each benchmark sends its judge the sampling parameters its official script sends
(:data:`LOONG_JUDGE`, :data:`CORPUSQA_JUDGE`), whatever the chat model was built with,
so ``longctx report --judge MODEL`` reproduces the official judge calls.

A judge call that raises is recorded as a :class:`JudgeResult` with ``error`` set,
never swallowed: each benchmark decides what an error means (CorpusQA: wrong;
Loong: not a parseable rating).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

# 2: the official judge parameters are sent with every call; 3: max_tokens,
# top_p and seed among them
VERSION = 3


@dataclass(frozen=True)
class JudgeParams:
    """Sampling parameters sent with every judge call (``None``: not sent); ``extra_body``: fields
    an OpenAI-compatible server reads beside the standard ones (a vLLM server's ``top_k``,
    ``chat_template_kwargs``), merged into the request body; ``api``: ``"chat"`` (the chat model's
    own call) or ``"responses"`` (OpenAI's Responses API through the judge's OpenAI client, as
    BrowseComp-Plus's ``evaluate_with_openai.py`` calls it: :func:`call_responses_judge`)."""

    temperature: float | None = 0.0
    n: int | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    seed: int | None = None
    extra_body: Mapping[str, Any] | None = None
    api: Literal["chat", "responses"] = "chat"

    def kwargs(self) -> dict[str, Any]:
        """The parameters to send, as chat-model call keyword arguments."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "api"}
        if values["extra_body"] is not None:
            values["extra_body"] = dict(values["extra_body"])
        return {k: v for k, v in values.items() if v is not None}


#: Loong ``config/models/gpt4.yaml`` (the ``--eval_model`` of ``src/run.sh``): ``run_args:
#: temperature: 0.0``, which ``src/utils/generate.py`` sends alone for OpenAI models.
LOONG_JUDGE = JudgeParams(temperature=0.0)
#: CorpusQA ``src/eval.py``: ``client.chat.completions.create(..., temperature=0.0, n=1)``.
CORPUSQA_JUDGE = JudgeParams(temperature=0.0, n=1)
#: MemoryAgentBench ``llm_based_eval/longmem_qa_evaluate.py``: gpt-4o with
#: ``n=1, temperature=0, max_tokens=10``.
LONGMEMEVAL_JUDGE = JudgeParams(temperature=0.0, n=1, max_tokens=10)
#: MemoryAgentBench ``llm_based_eval/summarization_evaluate.py``:
#: ``OpenAIModel("gpt-4o-2024-05-13", temperature=0.1, generation_max_length=4096)``, whose
#: ``generate`` sends ``top_p=0.9`` and ``seed=42`` too.
INFBENCH_SUM_JUDGE = JudgeParams(temperature=0.1, max_tokens=4096, top_p=0.9, seed=42)


@dataclass(frozen=True)
class JudgeResult:
    """The judge's raw reply, or the error that prevented one."""

    text: str | None
    error: str | None = None


def call_judge(
    judge: Any, prompt: str, system: str | None = None, *, params: JudgeParams = JudgeParams()
) -> JudgeResult:
    """Ask ``judge`` (a LangChain chat model) once, with the official sampling parameters.

    Args:
        judge: A ``BaseChatModel``.
        prompt: The user turn.
        system: Optional system turn.
        params: The benchmark's official judge parameters (default: temperature 0), sent with
            the call; they override the model's own (e.g. a temperature it was built with).

    Returns:
        The reply text, or the exception's type and message in ``error``.
    """
    if params.api == "responses":
        return call_responses_judge(judge, prompt, system, params=params)
    from langchain_core.messages import HumanMessage, SystemMessage

    messages = ([SystemMessage(system)] if system else []) + [HumanMessage(prompt)]
    try:
        reply = judge.invoke(messages, **params.kwargs())
    except Exception as exc:  # noqa: BLE001
        # any provider error is an outcome to record, not to crash a 1,600-item run on
        return JudgeResult(text=None, error=f"{type(exc).__name__}: {exc}")
    content = reply.content if isinstance(reply.content, str) else str(reply.content)
    return JudgeResult(text=content)


def call_responses_judge(
    judge: Any, prompt: str, system: str | None = None, *, params: JudgeParams
) -> JudgeResult:
    """Ask ``judge`` once through OpenAI's Responses API, the body as the OpenAI client's
    ``responses.create(model=, max_output_tokens=, input=PROMPT)`` sends it (``instructions``: the
    system text; ``temperature`` / ``top_p`` only when set); the reply is its ``output_text``.

    ``judge`` must be an OpenAI chat model (``openai:MODEL``): its client, server, key, retries
    and model name are used, so the request is the official one byte for byte.
    """
    client, model = getattr(judge, "root_client", None), getattr(judge, "model_name", None)
    if client is None or not model:
        raise TypeError(
            "this judge calls OpenAI's Responses API: give an OpenAI chat model ('openai:MODEL')"
        )
    body: dict[str, Any] = {"model": model, "max_output_tokens": params.max_tokens, "input": prompt}
    if params.max_tokens is None:
        del body["max_output_tokens"]
    if system:
        body["instructions"] = system
    for name in ("temperature", "top_p"):
        if getattr(params, name) is not None:
            body[name] = getattr(params, name)
    if params.extra_body:
        body["extra_body"] = dict(params.extra_body)
    try:
        reply = client.responses.create(**body)
    except Exception as exc:  # noqa: BLE001
        return JudgeResult(text=None, error=f"{type(exc).__name__}: {exc}")
    return JudgeResult(text=reply.output_text)
