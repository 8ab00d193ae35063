"""``answer(corpus, question)`` and ``answer_many``: the entry points every user and experiment
uses.

``aanswer`` / ``aanswer_many`` are the same for async code (run on the caller's event loop).
All are thin: validate the inputs, make the chat model, and hand over to the one run
path (:func:`longctx.graphs.runtime.run.run_strategy`), which runs any registered strategy over one
or many questions the way its registry entry declares.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import logging
import math
import sys
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from langchain_core.language_models import BaseChatModel

from longctx.agents.calibration import ModelSpeed
from longctx.agents.chat_errors import as_chat_model_error
from longctx.agents.chat_models import make_chat_model
from longctx.agents.embedded_chat import EmbeddedChatModel
from longctx.agents.jsonsafe import is_plain, json_safe
from longctx.agents.run_plan import plan_for, too_slow
from longctx.agents.strategy_plan import remaining_plan, strategy_plan, with_index_calls
from longctx.graphs import STRATEGIES
from longctx.graphs.index.retrieval_service import RetrievalService
from longctx.graphs.metering.budget import Budget, CostPlan
from longctx.graphs.metering.plan_check import capped, check_plan
from longctx.graphs.plugin.config import StrategyConfig
from longctx.graphs.plugin.registry import Strategy
from longctx.graphs.plugin.strategy_registry import one_answer_strategy
from longctx.graphs.runtime.run import RunOptions, arun_strategy, run_strategy
from longctx.retrieval import Index
from longctx.retrieval.contract import Answer, Corpus, Question, Step, as_question
from longctx.retrieval.contract.errors import OptionError

#: Questions in flight at once in ``answer_many`` for single-question strategies.
DEFAULT_CONCURRENCY = 4

P = ParamSpec("P")
R = TypeVar("R")

log = logging.getLogger(__name__)


def warn_if_slow(
    strategy: str,
    corpus: Corpus,
    questions: int,
    chat: BaseChatModel,
    cfg: StrategyConfig | None = None,
    *,
    speed: ModelSpeed | None = None,
) -> str | None:
    """Say up front when a run will take long on the embedded model, at its speed measured on this
    machine (:mod:`longctx.agents.calibration`); returns the message (also logged as a warning), or
    ``None``."""
    if not isinstance(chat, EmbeddedChatModel):
        return None
    cfg = cfg if cfg is not None else STRATEGIES.get(strategy).make_config()
    plans, speed = plan_for(
        {strategy: cfg}, [(corpus.num_tokens, len(corpus), questions)], chat, speed=speed
    )
    if not too_slow(plans) or speed is None:
        return None
    (plan,) = plans
    if plan.seconds is None:
        return None
    message = (
        f"{strategy} will read about {round(plan.prompt_tokens):,} tokens in "
        f"~{math.ceil(plan.calls):,} calls on the embedded model: roughly "
        f"{plan.seconds / 3600:.1f} hours at the {speed.prompt_tokens_per_second:,.0f} prompt "
        "tokens/s measured on this machine. Point llm=/--llm at a served model for corpora this "
        "size."
    )
    log.warning(message)
    return message


def _async_twin(
    sync: Callable[P, R],
) -> Callable[[Callable[..., Awaitable[R]]], Callable[P, Coroutine[Any, Any, R]]]:
    """Give the decorated coroutine function ``sync``'s parameters (its signature, for ``help()``,
    IDEs and type checkers): a twin's parameter list and defaults are written once, on ``sync``."""

    def twin(fn: Callable[..., Awaitable[R]]) -> Callable[P, Coroutine[Any, Any, R]]:
        # functions take attributes; mypy does not model it
        setattr(fn, "__signature__", inspect.signature(sync))
        # The same function, now typed with sync's parameters.
        return fn  # type: ignore[return-value]

    return twin


def _arguments(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """``args`` bound to ``fn``'s parameters, defaults filled in (its ``**config`` as one dict)."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def answer(
    corpus: Corpus,
    question: str | Question,
    *,
    strategy: str = "rag",
    llm: str | BaseChatModel | None = None,
    preset: str | None = None,
    cache_dir: str | Path | None = None,
    show_progress: bool | None = None,
    callbacks: Any = None,
    budget: Budget | None = None,
    checkpoint: bool = False,
    **config: Any,
) -> Answer:
    """Answer ``question`` over ``corpus`` with one strategy.

    Args:
        corpus: The documents to answer over.
        question: A string, or a :class:`~retrieval.contract.Question` with choices and an
            output-format instruction.
        strategy: A registered strategy name (``rag``, ``full_context``, ``memagent``, ...);
            ``rag`` by default, as in :func:`answer_many`, :func:`estimate` and the async twins.
            A variant (``rag@x``) is refused with ``ValueError``: it is a column of a run.
        llm: A chat model, a spec (``"embedded"``, ``"openai:MODEL"``), or ``None`` for
            ``$LONGCTX_LLM`` / the embedded default.
        preset: A named config of the strategy (e.g. ``"longbench-500x3"`` for ``rag``).
        cache_dir: Root of the index cache and checkpoints (default ``~/.cache/longctx``).
        show_progress: Progress bars while indexing and reading (default: when stderr is a
            terminal).
        callbacks: LangChain callback handlers (or a parent run's callback manager): they see
            the strategy's graph run, its nodes and every model call, nested under the caller's run.
        budget: At most this many calls / prompt tokens / USD
            (:class:`~graphs.metering.budget.Budget`): a plan that cannot fit is refused before any
            call; a run that reaches it stops issuing calls and returns what it did, marked
            ``stopped="budget"``.
        checkpoint: Checkpoint a single-question run under ``cache_dir``: killed, it resumes at its
            last finished step (``longctx.graphs.runtime.run_checkpoint``); off by default.
            MemAgent's option is ``resume``.
        **config: Fields of the strategy's config (e.g. ``top_k=5``, ``retriever="dense"``);
            unknown names raise ``TypeError``, invalid values ``ConfigError``.

    Returns:
        The :class:`~retrieval.contract.Answer` with evidence, usage, steps and the effective
        config.

    Raises:
        ChatModelError: The chat model's server does not answer, rejects the key, or keeps failing.
        BudgetExceeded: The strategy's cost plan cannot fit ``budget`` (the message has the plan).
    """
    return answer_many(
        corpus,
        [question],
        strategy=strategy,
        llm=llm,
        preset=preset,
        cache_dir=cache_dir,
        show_progress=show_progress,
        callbacks=callbacks,
        budget=budget,
        checkpoint=checkpoint,
        **config,
    )[0]


def answer_many(
    corpus: Corpus,
    questions: list[str | Question],
    *,
    strategy: str = "rag",
    llm: str | BaseChatModel | None = None,
    preset: str | None = None,
    cache_dir: str | Path | None = None,
    show_progress: bool | None = None,
    concurrency: int | None = None,
    index: Index | None = None,
    callbacks: Any = None,
    budget: Budget | None = None,
    checkpoint: bool = False,
    **config: Any,
) -> list[Answer]:
    """Answer several questions over one corpus, in the order of ``questions``.

    Batched strategies (``memagent``) advance all questions over each chunk together and
    send their calls as one concurrent batch; the run is checkpointed and resumes after a
    crash. Other strategies build their index once and answer several questions at a time.

    Args:
        strategy: A registered strategy name; ``rag`` by default, as :func:`answer`.
        concurrency: Calls in flight at once. For a strategy with a ``concurrency`` option
            (memagent, pai) it sets that option; for the others it is the number of
            questions answered at once (default 4). ``None`` keeps the strategy's option.
        index: A prebuilt index to use instead of the cached one.
        budget: Limits for all the questions together (see :func:`answer`).

    The other arguments are :func:`answer`'s.
    """
    return _answers(
        _prepare(
            corpus,
            questions,
            strategy,
            llm,
            preset,
            cache_dir,
            show_progress,
            concurrency,
            index,
            callbacks,
            budget,
            config,
            checkpoint,
        )
    )


@_async_twin(answer)
async def aanswer(corpus: Corpus, question: str | Question, **options: Any) -> Answer:
    """:func:`answer` for async code (FastAPI and the like): the same arguments and answer.

    The strategy's graph runs with ``ainvoke`` on the caller's event loop (PAI's judges
    await the model under its ``concurrency``); MemAgent runs in a worker thread. Cancelling
    the task stops issuing model calls; a cancelled MemAgent run keeps its checkpoint and
    the next identical call resumes it.
    """
    args = _arguments(answer, corpus, question, **options)
    args["questions"] = [args.pop("question")]
    # as answer() calls answer_many
    return (await _aanswers(_prepare(concurrency=None, index=None, **args)))[0]


@_async_twin(answer_many)
async def aanswer_many(
    corpus: Corpus, questions: list[str | Question], **options: Any
) -> list[Answer]:
    """:func:`answer_many` for async code; see :func:`aanswer` for how it runs and cancels."""
    return await _aanswers(_prepare(**_arguments(answer_many, corpus, questions, **options)))


def _answers(call: _Call | None) -> list[Answer]:
    """The answers of a prepared call (none without questions), JSON-ready, failures explained."""
    if call is None:
        return []
    with _explained(call.options["llm"]):
        answers = run_strategy(call.spec, call.cfg, call.questions, **call.options)
    return [json_ready(a) for a in answers]


async def _aanswers(call: _Call | None) -> list[Answer]:
    """:func:`_answers` on the caller's event loop."""
    if call is None:
        return []
    with _explained(call.options["llm"]):
        answers = await arun_strategy(call.spec, call.cfg, call.questions, **call.options)
    return [json_ready(a) for a in answers]


def json_ready(result: Answer) -> Answer:
    """``result`` with every field a strategy filled made JSON-safe (bytes from a SQL result,
    ``inf`` scores, numpy numbers become text, null and Python numbers; nothing is cut), so
    ``result.to_dict()`` always serializes, e.g. for ``longctx answer --json``."""

    def safe(
        value: Any,
    ) -> Any:  # values that are JSON already are kept as they are (tuples stay tuples)
        return value if is_plain(value) else json_safe(value, max_chars=None, max_total=None)

    evidence = [
        dataclasses.replace(e, **{f.name: safe(getattr(e, f.name)) for f in dataclasses.fields(e)})
        for e in result.evidence
    ]
    steps = [
        s if is_plain(s) else Step.coerce(json_safe(dict(s), max_chars=None, max_total=None))
        for s in result.steps
    ]
    return dataclasses.replace(
        result,
        answer=safe(result.answer),
        raw=safe(result.raw),
        evidence=evidence,
        steps=steps,
        config=safe(result.config),
    )


def estimate(
    corpus: Corpus,
    question: str | Question | list[str | Question],
    *,
    strategy: str = "rag",
    llm: str | BaseChatModel | None = None,
    preset: str | None = None,
    cache_dir: str | Path | None = None,
    budget: Budget | None = None,
    checkpoint: bool = False,
    **config: Any,
) -> CostPlan:
    """What ``answer`` (or ``answer_many``, given a list) would spend, before any model call.

    The bounds of the strategy's cost model (:attr:`longctx.graphs.plugin.registry.Strategy.costs`):
    model calls at least and at most, prompt tokens (estimated), and the formula they follow.
    ``llm`` (never called) gives the tokenizer the budget guard counts with, MemAgent's chunks and
    full context's window; as in
    :func:`answer`, ``None`` is ``$LONGCTX_LLM`` or the embedded default, so this is the plan a
    budget of ``answer`` with the same arguments is checked against (the same numbers as its
    refusal). ``plan.cost_usd(price)`` turns it into USD at a price. An index-time strategy's least
    counts the index calls still to make under ``cache_dir`` (none when its tree or graph is cached
    there). ``budget``: the most cut to what it lets run (an unbounded most, ``None``, becomes the
    budget's). ``checkpoint``: as ``answer(..., checkpoint=True)`` would resume, less what the
    questions' checkpoints (and a MemAgent run's) already paid.

    Raises:
        ValueError: The strategy declares no cost plan (a plug-in).
    """
    _check_corpus(corpus)
    spec = STRATEGIES.get(one_answer_strategy(strategy))
    cfg = spec.make_config(preset, **config)
    qs = [as_question(q) for q in (question if isinstance(question, list) else [question])]
    chat = make_chat_model(llm)  # the model answer() would use: one plan, one tokenizer
    if checkpoint:
        return capped(remaining_plan(spec, cfg, corpus, qs, chat, cache_dir, True), budget)
    plan = with_index_calls(
        spec, cfg, corpus, chat, cache_dir, strategy_plan(spec, cfg, corpus, qs, chat)
    )
    return capped(plan, budget)


@dataclasses.dataclass(frozen=True)
class _Call:
    """One call's validated inputs, shared by the sync and async twins: what the run path takes."""

    spec: Strategy[Any]
    cfg: StrategyConfig
    questions: list[Question]
    options: RunOptions


def _prepare(
    corpus: Corpus,
    questions: list,
    strategy: str,
    llm: Any,
    preset: str | None,
    cache_dir: str | Path | None,
    show_progress: bool | None,
    concurrency: int | None,
    index: Index | None,
    callbacks: Any,
    budget: Budget | None,
    config: dict,
    checkpoint: bool = False,
) -> _Call | None:
    """Validated inputs of one call (strategy, config, questions, chat model, progress flag), or
    ``None`` when there are no questions; a plan that cannot fit ``budget`` is refused here, before
    any call."""
    _check_corpus(corpus)
    spec = STRATEGIES.get(one_answer_strategy(strategy))
    fields = {f for f in spec.config_cls.__dataclass_fields__}
    if concurrency is not None and "concurrency" in fields:
        config = {**config, "concurrency": concurrency}
    cfg = spec.make_config(preset, **config)
    qs = [as_question(q) for q in questions]
    if budget is not None and not isinstance(budget, Budget):
        raise OptionError(f"budget must be an agents.Budget, got {type(budget).__name__}")
    if budget is not None:
        budget.check_priced()
    if not qs:
        return None
    chat = make_chat_model(llm)
    _check_budget(spec, cfg, corpus, qs, chat, cache_dir, budget, checkpoint)
    warn_if_slow(strategy, corpus, len(qs), chat, cfg)
    progress = sys.stderr.isatty() if show_progress is None else show_progress
    options = RunOptions(
        llm=chat,
        corpus=corpus,
        index=index,
        preset=preset,
        cache_dir=cache_dir,
        concurrency=concurrency or DEFAULT_CONCURRENCY,
        show_progress=progress,
        callbacks=callbacks,
        budget=budget,
        checkpoint=checkpoint,
    )
    return _Call(spec, cfg, qs, options)


def _check_budget(
    spec: Strategy[Any],
    cfg: StrategyConfig,
    corpus: Corpus,
    qs: list[Question],
    chat: BaseChatModel,
    cache_dir: str | Path | None,
    budget: Budget | None,
    checkpoint: bool,
) -> None:
    """Refuse a plan that cannot fit ``budget``, or warn (may stop, unbounded), before any call.
    The plan is computed only where something reads it: a budget with limits (against the plan
    left after the index still to build and what checkpoints hold), or a plan that may have no
    most (its :class:`~graphs.metering.plan_check.UnboundedCostWarning`); a budget-less run of a
    strategy declared ``always_bounded`` computes none (MemAgent's: a tokenization pass over the
    corpus)."""
    costs = spec.costs
    if costs is None or not costs.has_bounds:
        return
    if budget is not None and budget.limited:
        check_plan(remaining_plan(spec, cfg, corpus, qs, chat, cache_dir, checkpoint), budget)
    elif not costs.always_bounded:
        check_plan(strategy_plan(spec, cfg, corpus, qs, chat), budget)


@contextlib.contextmanager
def _explained(chat: BaseChatModel) -> Iterator[None]:
    """Chat-model failures raised as :class:`ChatModelError` with what to check."""
    try:
        yield
    except Exception as exc:
        explained = as_chat_model_error(exc, chat)
        if explained is exc:
            raise
        raise explained from exc


def index_for(
    corpus: Corpus, cfg: Any, *, cache_dir: str | Path | None = None, show_progress: bool = False
) -> Index:
    """The (cached) index a retrieval-using strategy config asks for."""
    return RetrievalService(
        settings=cfg, cache_dir=cache_dir, show_progress=show_progress
    ).build_index(corpus)


def _check_corpus(corpus: Any) -> None:
    if not isinstance(corpus, Corpus):
        raise OptionError(
            "corpus must be a retrieval.Corpus (see Corpus.from_path / from_texts), got "
            f"{type(corpus).__name__}"
        )
