"""Calling a chat model from a node, and the model facts nodes need (tokenizer, window).

The tokenizer is chosen once per model (see :func:`tokenizer_for` and
:func:`longctx.graphs.tokenizers.tokenizer_choice.select_tokenizer`) and is the one every count for
that model uses: MemAgent's chunks and memory bound, full-context truncation, usage estimates.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import asdict
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from longctx.graphs.metering.budget_field import budget_kwargs
from longctx.graphs.tokenizers.tokenizer_choice import ModelFacts, select_tokenizer
from longctx.retrieval import tokens
from longctx.retrieval.contract import Usage
from longctx.retrieval.deadlines import with_async_deadline
from longctx.retrieval.reported_usage import metadata_counts
from longctx.retrieval.tokenizers import Tokenizer, validate_spec

#: Key of the tokenizer spec in a chat model's ``metadata`` (set by :func:`set_tokenizer`).
TOKENIZER_KEY = "tokenizer"


def complete(
    llm: BaseChatModel,
    prompt: str,
    *,
    max_tokens: int,
    temperature: float = 0.0,
    stop: Sequence[str] | None = None,
    system: str | None = None,
) -> str:
    """One user-turn chat call (after a ``system`` turn, if given); returns the reply text (greedy
    by default, as LongBench)."""
    return complete_with_usage(
        llm, prompt, max_tokens=max_tokens, temperature=temperature, stop=stop, system=system
    )[0]


def complete_with_usage(
    llm: BaseChatModel,
    prompt: str,
    *,
    max_tokens: int,
    temperature: float = 0.0,
    stop: Sequence[str] | None = None,
    system: str | None = None,
    **kwargs: Any,
) -> tuple[str, dict[str, Any]]:
    """One call, returning the reply and its usage
    ``{calls, cached_calls, prompt_tokens, cached_prompt_tokens, completion_tokens, estimated}``.

    Strategies that checkpoint keep usage in their state so it survives a resume; a model
    that reports no usage is counted with its tokenizer (:func:`tokenizer_for`) and marked
    ``estimated``.
    """
    # the field the model honours, also for a ChatOpenAI the user built
    budget = budget_kwargs(llm, max_tokens)
    turns = ([SystemMessage(content=system)] if system is not None else []) + [
        HumanMessage(content=prompt)
    ]
    message = llm.invoke(
        turns,
        **budget,
        temperature=temperature,
        stop=None if stop is None else list(stop),
        **kwargs,
    )
    content = message.content
    if not isinstance(content, str):
        content = "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return content, reply_usage(
        message, prompt, content, count=lambda text: tokenizer_for(llm).count(text)
    )


def chat(
    llm: BaseChatModel,
    messages: Sequence[BaseMessage],
    *,
    max_tokens: int | None,
    tools: Sequence[Any] | None = None,
    tool_choice: Any = None,
    temperature: float | None = 0.0,
    stop: Sequence[str] | None = None,
    config: RunnableConfig | None = None,
    **kwargs: Any,
) -> AIMessage:
    """One turn of a conversation (an agent's): ``messages`` sent with ``tools`` bound (any form
    ``bind_tools`` takes; ``tool_choice`` passed to it), the answer budget sent as
    :func:`complete` sends it (:func:`~graphs.metering.budget_field.budget_kwargs`; ``None``: no
    budget field, the server's default, as official code that sends none); returns the reply with
    its ``tool_calls`` and ``usage_metadata``.

    The budget guard and the usage tracker count the tool schemas and the history's tool-call
    arguments with the messages (:mod:`longctx.graphs.calls.prompt_text`). A model without native
    tool calling raises ``NotImplementedError`` from ``bind_tools``: the tool loop's JSON adapter
    (:mod:`longctx.graphs.calls.tool_loop`) is for those.
    """
    runnable: Any = llm
    if tools:
        choice = {} if tool_choice is None else {"tool_choice": tool_choice}
        runnable = llm.bind_tools(list(tools), **choice)
    message = runnable.invoke(
        list(messages),
        config,
        **({} if max_tokens is None else budget_kwargs(llm, max_tokens)),
        **({} if temperature is None else {"temperature": temperature}),
        stop=None if stop is None else list(stop),
        **kwargs,
    )
    if not isinstance(message, AIMessage):
        raise TypeError(f"a chat model returned {type(message).__name__}, not an AIMessage")
    return message


def has_native_async(llm: BaseChatModel) -> bool:
    """Whether ``llm`` implements ``_agenerate`` itself (LangChain's default runs ``_generate`` in a
    thread)."""
    return type(llm)._agenerate is not BaseChatModel._agenerate


@contextlib.asynccontextmanager
async def run_client(llm: BaseChatModel) -> AsyncIterator[BaseChatModel]:
    """``llm`` for one async run: for an OpenAI-client model, a shallow copy with its own async
    connection pool, closed when the run ends; any other model as is.

    LangChain's ``ChatOpenAI`` shares one async HTTP connection pool per server across all
    instances; pooled connections belong to the event loop that opened them, so a second
    ``asyncio.run`` (or another thread's loop) reusing them fails with "Event loop is
    closed". The run's own pool lives on the run's loop and is closed with it. It is the
    SDK's aiohttp transport when aiohttp is installed (it is a LlamaIndex dependency): its
    connection pool costs a fraction of httpx's per request, which bounds wide fan-outs on a
    small machine (``benchmarks/bench_pai.py``: 1.15x against 1.30x of the ideal judge
    makespan at concurrency 32). Everything else, callbacks included, is shared. A model
    given its own ``http_async_client`` is left as is.
    """
    root = getattr(llm, "root_async_client", None)
    if (
        root is None
        or getattr(llm, "http_async_client", None) is not None
        or not hasattr(root, "copy")
    ):
        yield llm
        return
    http = _async_http_client()
    own = root.copy(http_client=http)
    run_llm = llm.model_copy(
        update={"root_async_client": own, "async_client": own.chat.completions}
    )
    session = _lean_session(run_llm)
    try:
        yield run_llm
    finally:
        if session is not None:
            await session.close()
        await http.aclose()


def _lean_session(llm: BaseChatModel) -> Any:
    """An aiohttp session the model posts its calls through (``use_http_session``: our OpenAI
    model's lean transport, a fraction of the SDK's client CPU per call), or ``None``."""
    use = getattr(llm, "use_http_session", None)
    if use is None or importlib.util.find_spec("aiohttp") is None:
        return None
    import aiohttp  # optional: installed with the SDK's aiohttp extra and LlamaIndex

    # trust_env off: the transport looks the environment's proxy up once (aiohttp would, per
    # request, in a thread) limit: the connections a run may hold open, the SDK's default pool limit
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1000), trust_env=False)
    # unused when the model's client needs the SDK's path; closed with the run all the same
    use(session)
    return session


@functools.lru_cache(maxsize=1)
def _ssl_context() -> Any:
    """The TLS context of the SDK's default client, made once per process: loading the CA
    bundle cost 20-60 ms of every run when each run's client made its own."""
    try:
        import httpx2 as httpx  # the openai SDK's vendored httpx
    except ImportError:  # an SDK before it
        import httpx  # type: ignore[no-redef]  # the same API under its own name
    return httpx.create_ssl_context()


def _async_http_client() -> Any:
    """The openai SDK's aiohttp-backed async client when aiohttp is installed, else its httpx
    default; a request's timeout is a deadline for the whole request
    (:mod:`longctx.retrieval.deadlines`)."""
    import openai  # only models that already carry an openai client get here

    if importlib.util.find_spec("aiohttp") is not None:
        return with_async_deadline(openai.DefaultAioHttpClient(verify=_ssl_context()))
    return with_async_deadline(openai.DefaultAsyncHttpxClient(verify=_ssl_context()))


def reply_usage(
    message: Any, prompt: str, text: str, *, count: Callable[[str], int] | None = None
) -> dict[str, Any]:
    """What one reply cost, as :class:`~retrieval.contract.Usage` fields: free when replayed
    from the LLM cache, the model's own counts when it reports them (with the prompt tokens its
    server read from its prompt cache, ``input_token_details.cache_read``), else (none, or counts
    that are not token counts: :func:`~retrieval.reported_usage.metadata_counts`) ``count`` (the
    model's tokenizer; cl100k when not given) of ``prompt`` and ``text`` marked ``estimated``."""
    meta = getattr(message, "usage_metadata", None)
    if getattr(message, "response_metadata", {}).get("cache_hit"):
        return {
            "llm_calls": 0,
            "cached_calls": 1,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "estimated": False,
        }
    counts = metadata_counts(meta)  # None: no usage, or counts no server can mean (negative, ...)
    if counts is not None:
        return {
            "llm_calls": 1,
            "prompt_tokens": counts[0],
            "cached_prompt_tokens": counts[1],
            "completion_tokens": counts[2],
            "estimated": False,
        }
    count = count or tokens.count_tokens
    return {
        "llm_calls": 1,
        "prompt_tokens": count(prompt),
        "completion_tokens": count(text),
        "estimated": True,
    }


def add_usage(
    a: dict[str, dict[str, Any]] | None, b: dict[str, dict[str, Any]] | None
) -> dict[str, dict[str, Any]]:
    """Reducer summing per-question usage dicts (question key -> :class:`Usage` fields)."""
    out = {k: dict(v) for k, v in (a or {}).items()}
    for key, u in (b or {}).items():
        out[key] = asdict(Usage.from_dict(out.get(key)) + Usage.from_dict(u))
    return out


def set_tokenizer(llm: BaseChatModel, spec: str | None) -> BaseChatModel:
    """Make ``spec`` the tokenizer of ``llm`` (validated now; stored in ``llm.metadata``); returns
    ``llm``.

    Specs: ``"auto"`` (the default order of
    :func:`~graphs.tokenizers.tokenizer_choice.select_tokenizer`), ``"model"``, ``"hf:PATH"``,
    ``"server"`` / ``"server:<dialect>"``, ``"tiktoken:<encoding>"``, ``"cl100k"``.

    Raises:
        retrieval.tokenizers.TokenizerError: An invalid spec, or an ``hf:`` / ``tiktoken:``
            tokenizer that cannot be loaded offline.
    """
    normalised = validate_spec(spec)
    if normalised != tokenizer_spec(llm):  # "auto" on a model without a choice leaves it untouched
        llm.metadata = {**(llm.metadata or {}), TOKENIZER_KEY: normalised}
    return llm


def tokenizer_spec(llm: BaseChatModel) -> str:
    """The tokenizer spec set on ``llm`` (``"auto"`` when none)."""
    return str((getattr(llm, "metadata", None) or {}).get(TOKENIZER_KEY) or "auto")


def model_facts(llm: BaseChatModel) -> ModelFacts:
    """What :func:`~graphs.tokenizers.tokenizer_choice.select_tokenizer` needs to know about
    ``llm``."""
    encode, decode = getattr(llm, "tokenize", None), getattr(llm, "detokenize", None)
    key: Any = getattr(llm, "openai_api_key", None)
    secret = key.get_secret_value() if hasattr(key, "get_secret_value") else key
    return ModelFacts(
        model_id=model_id(llm),
        model_name=str(getattr(llm, "model_name", None) or getattr(llm, "model", None) or ""),
        base_url=getattr(llm, "openai_api_base", None),
        api_key=secret if secret and secret != "not-needed" else None,
        own=(encode, decode) if callable(encode) and callable(decode) else None,
    )


_CHOSEN: dict[tuple[Any, ...], Tokenizer] = {}
_CHOSEN_LOCK = threading.Lock()


def tokenizer_for(llm: BaseChatModel) -> Tokenizer:
    """The one tokenizer every count for ``llm`` uses, chosen once per (spec, model, server).

    The model's own tokenizer is bound to ``llm`` itself and not shared; a choice made
    while the server did not answer is used but not remembered.
    """
    facts = model_facts(llm)
    spec = tokenizer_spec(llm)
    if facts.own is not None and spec in ("auto", "model"):
        return select_tokenizer(spec, facts)  # a cheap wrapper around the model's own methods
    key = (spec, facts.model_id, facts.base_url)
    with _CHOSEN_LOCK:
        found = _CHOSEN.get(key)
        if found is not None:
            return found
        chosen = select_tokenizer(spec, facts)
        if not chosen.provisional:
            _CHOSEN[key] = chosen
        return chosen


def prompt_codec(
    llm: BaseChatModel,
) -> tuple[Callable[[str], list[int]], Callable[[list[int]], str]]:
    """``(encode, decode)`` in ``llm``'s tokenizer (see :func:`tokenizer_for`, labelled by
    :func:`tokenizer_id`).

    Truncating by the serving model's tokenizer matters for small windows (the embedded
    model's 8k) and is what the official loops do (LongBench v2: the model's tokenizer,
    tiktoken's encoding for GPT models).
    """
    tok = tokenizer_for(llm)
    return tok.encode, tok.decode


def tokenizer_id(llm: BaseChatModel) -> str:
    """Which tokenizer counts for ``llm`` (``model:...``, ``hf:...``, ``server:...``,
    ``tiktoken:...`` or ``fallback:cl100k_base``), recorded with every answer."""
    return tokenizer_for(llm).id


def tokenizer_manifest(llm: BaseChatModel) -> dict[str, Any]:
    """The tokenizer entry of a run manifest: ``{"tokenizer", "fallback", "note", "spec"}``.

    The runner records this once per run (``manifest["tokenizer"] = tokenizer_manifest(chat)``).
    """
    return {**tokenizer_for(llm).manifest(), "spec": tokenizer_spec(llm)}


def context_window(llm: BaseChatModel, default: int) -> int:
    """The model's context window in tokens when it reports one, else ``default``."""
    window = getattr(llm, "context_window", None)
    return int(window) if window else default


def model_id(llm: BaseChatModel) -> str:
    """Model name and server (``name @ url``), for run keys and manifests: runs of different models
    never mix."""
    name = getattr(llm, "model_name", None) or getattr(llm, "model", None) or type(llm).__name__
    url = getattr(llm, "openai_api_base", None)
    return f"{name} @ {url}" if url else str(name)
