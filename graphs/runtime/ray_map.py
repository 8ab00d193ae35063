"""One map of model calls on Ray, shared by every strategy stage that runs as Ray tasks (the
structured strategy's extraction, RAPTOR's summaries, HippoRAG's OpenIE).

What it does for a stage: the caller's chat model travels to the workers as a
:class:`ModelRecipe` (an OpenAI-client model, whose HTTP clients do not pickle, is rebuilt from
its spec: ``openai:MODEL`` on the same base URL, the API key from the worker's
``OPENAI_API_KEY``, never shipped; any other model is pickled as is); the stage's batches go out
as Ray tasks, at most ``ray_max_in_flight`` at once, each to the endpoint with the fewest tasks in
flight; every finished task is handed to the stage as it returns (so the stage writes its log at
once: a killed run resumes from it); and the workers' calls, which the caller's callbacks never
see, are summed from the tasks and reported as one :data:`~graphs.metering.usage.USAGE_EVENT` of
index-time work (every such stage builds something cached and reused by later questions).
Under a budget the run's guard still holds: each worker call is reserved with it before it is sent,
through a :class:`~graphs.metering.budget_channel.BudgetChannel` the map opens for its tasks.

What it leaves to the stage: what a batch is, what a task runs (:func:`counted_model` gives it
the model with its calls counted), and what a finished or lost task means (the stage's
``on_result`` / ``on_lost`` say whether to go on submitting; the tasks already in flight
always finish, so none of their work is lost).
"""

from __future__ import annotations

import logging
import os
import pickle
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol, TypeVar

from langchain_core.callbacks import dispatch_custom_event
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config

from longctx.graphs.calls.llm import set_tokenizer, tokenizer_for, tokenizer_spec
from longctx.graphs.metering.budget_callback import ChannelGuard
from longctx.graphs.metering.budget_channel import BudgetChannel, guard_of
from longctx.graphs.metering.budget_client import BudgetClient
from longctx.graphs.metering.budget_guard import BudgetGuard
from longctx.graphs.metering.usage import USAGE_EVENT, UsageTracker
from longctx.graphs.runtime.run_config import with_handler
from longctx.retrieval.contract import Usage
from longctx.retrieval.ray_support import ensure_ray

#: CPUs Ray reserves per task (its calls wait on the network; parsing is light). Zero when the
#: answer itself runs in a Ray task (``longctx run --ray`` with a stage on Ray): Ray yields a
#: task's CPU only while its main thread blocks, and LangGraph runs the node on another, so
#: tasks that needed a CPU could wait forever for the ones their callers hold.
TASK_CPUS = 1.0
#: Retries of a task Ray lost (worker or node died).
TASK_RETRIES = 1

#: ``ChatOpenAI`` fields that go into its request bodies, carried to the workers' rebuilt models.
REQUEST_FIELDS = (
    "extra_body",
    "temperature",
    "top_p",
    "seed",
    "stop",
    "frequency_penalty",
    "presence_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "n",
    "max_tokens",
    "reasoning_effort",
    "use_responses_api",
    "stream_usage",
)

log = logging.getLogger(__name__)

B = TypeVar("B")
T = TypeVar("T")
R = TypeVar("R")


class RaySettings(Protocol):
    """The config fields of a stage on Ray (each strategy's config has them, validated there)."""

    @property
    def ray_address(self) -> str | None: ...
    @property
    def ray_max_in_flight(self) -> int: ...
    @property
    def ray_endpoints(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class ModelRecipe:
    """How a Ray worker gets the caller's chat model: ``model`` pickled as is, or an OpenAI-client
    model rebuilt as ``model_class(model=name, **options)`` with the worker's own API key.

    The class travels by reference (pickle imports its module on the worker), so this module
    needs no import of the layer that defines the chat models (``agents`` imports ``graphs``).
    """

    model: BaseChatModel | None = None
    model_class: Callable[..., BaseChatModel] | None = None  # the chat model's class
    name: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    tokenizer: str | None = None
    #: The ticket of the caller's budget channel (:mod:`longctx.graphs.metering.budget_channel`):
    #: each call is reserved there first.
    budget: str | None = None

    def build(self) -> BaseChatModel:
        """The chat model on this worker."""
        if self.model is not None:
            return self.model
        if self.model_class is None:
            raise ValueError("ModelRecipe needs a model or a model_class")
        # a local server ignores it, as make_chat_model does
        api_key = os.environ.get("OPENAI_API_KEY") or "not-needed"
        llm = self.model_class(model=self.name, api_key=api_key, **self.options)
        return set_tokenizer(llm, self.tokenizer) if self.tokenizer else llm


def model_recipe(llm: BaseChatModel, base_url: str | None = None) -> ModelRecipe:
    """The :class:`ModelRecipe` of ``llm`` (an OpenAI-client model: on ``base_url`` when given);
    a model that neither pickles nor is an OpenAI-client model is a ``TypeError``, as is a
    ``base_url`` for a model that is not an OpenAI-client one."""
    # langchain_openai's ChatOpenAI
    if getattr(llm, "root_client", None) is not None and getattr(llm, "model_name", None):
        # Its class is not imported here (agents imports graphs): its fields are read duck-typed.
        openai: Any = llm
        options: dict[str, Any] = {
            "base_url": base_url or openai.openai_api_base or str(openai.root_client.base_url),
            "max_retries": openai.max_retries,
        }
        if isinstance(openai.request_timeout, (int, float)):
            options["timeout"] = float(openai.request_timeout)
        for name in ("default_headers", "default_query", "model_kwargs", "organization"):
            value = getattr(llm, name, None)
            if value:
                options[name if name != "organization" else "openai_organization"] = value
        # what the caller's requests carry, so a worker's requests are the same
        for name in REQUEST_FIELDS:
            if (value := getattr(llm, name, None)) is not None:
                options[name] = value
        tokenizer = tokenizer_spec(llm)
        return ModelRecipe(
            model_class=type(llm),
            name=openai.model_name,
            options=options,
            tokenizer=None if tokenizer == "auto" else tokenizer,
        )
    if base_url is not None:
        raise TypeError(
            "ray_endpoints needs an OpenAI-compatible chat model ('openai:MODEL'), not "
            f"{type(llm).__name__}"
        )
    from ray import cloudpickle

    try:
        cloudpickle.dumps(llm)
    except Exception as exc:  # noqa: BLE001 - any pickling failure means the same thing here
        raise TypeError(
            f"map_executor='ray' sends the chat model to Ray workers, but {type(llm).__name__} "
            f"does not pickle ({type(exc).__name__}: {exc}); use an 'openai:MODEL' or 'embedded' "
            "model, or the local executor"
        ) from exc
    return ModelRecipe(model=llm)


def counted_model(recipe: ModelRecipe) -> tuple[BaseChatModel, UsageTracker]:
    """On a worker: the recipe's model with its calls counted by the returned tracker (what the
    task sends back as ``asdict(tracker.usage)`` under ``"usage"``)."""
    tracker = UsageTracker()
    built = recipe.build()
    callbacks = with_handler(built.callbacks, tracker)
    if recipe.budget is not None:  # the caller's budget holds: each call reserved before it is sent
        callbacks = with_handler(callbacks, ChannelGuard(BudgetClient(recipe.budget)))
    llm = built.model_copy(update={"callbacks": callbacks})
    tracker.count = tokenizer_for(llm).count
    return llm, tracker


def portable_error(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling (it goes back to the caller), else a ``RuntimeError`` naming
    it."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def run_batch(
    items: Sequence[T], do: Callable[[T], R], threads: int
) -> tuple[list[R], BaseException | None, str]:
    """On a worker: ``do`` over ``items`` on at most ``threads`` threads, as the local map runs them
    (a failure ends the batch: nothing more is started). The results that finished, in item order;
    the first error, as it can travel back (:func:`portable_error`); and its traceback."""
    results: list[tuple[int, R]] = []
    failures: list[tuple[BaseException, str]] = []
    failed = threading.Event()

    def one(k: int) -> None:
        if failed.is_set():
            return
        try:
            results.append((k, do(items[k])))
        except Exception as exc:  # noqa: BLE001 - raised in the caller, after the tasks in flight
            failed.set()
            failures.append((portable_error(exc), traceback.format_exc(limit=6)[-3000:]))

    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(items)))) as pool:
        list(pool.map(one, range(len(items))))
    error, trace = failures[0] if failures else (None, "")
    return [r for _, r in sorted(results, key=lambda kr: kr[0])], error, trace


@dataclass
class RayMapRun:
    """How one map on Ray went: tasks submitted and lost, the workers' usage, the CPUs a task
    reserved."""

    tasks: int = 0
    failed_tasks: int = 0
    usage: Usage = field(default_factory=Usage)
    task_cpus: float = TASK_CPUS
    endpoints: int = 1
    seconds: float = 0.0


_REMOTES: dict[tuple[Callable[..., Any], float], Any] = {}


def _remote(ray: Any, work: Callable[..., Any], cpus: float) -> Any:
    """``work`` as a Ray remote function reserving ``cpus`` (made once per process)."""
    if (work, cpus) not in _REMOTES:
        _REMOTES[work, cpus] = ray.remote(num_cpus=cpus, max_retries=TASK_RETRIES)(work)
    return _REMOTES[work, cpus]


def map_on_ray(
    work: Callable[..., dict[str, Any]],
    args: Sequence[Any],
    batches: Iterable[B],
    llm: BaseChatModel,
    settings: RaySettings,
    on_result: Callable[[B, dict[str, Any]], bool],
    on_lost: Callable[[B, BaseException], bool],
    config: RunnableConfig | None = None,
) -> RayMapRun:
    """Run ``work(recipe, *args, batch)`` (a module-level function returning a dict with
    ``"usage"``) as a Ray task per batch, at most ``settings.ray_max_in_flight`` at once.

    Each finished task goes to ``on_result(batch, result)`` as it returns, a task Ray lost (its
    worker died, its arguments did not unpickle) to ``on_lost(batch, error)``; either returns
    whether to go on submitting (the tasks in flight finish either way). The workers' usage is
    reported as index-time work to ``config``'s callbacks (``None``: the running node's), also
    when the caller stops with an error.
    """
    ray = ensure_ray(settings.ray_address)
    channel = budget_channel(ray, guard_of(config))  # the workers' calls reserved with the guard
    ticket = channel.__enter__().ticket if channel is not None else None
    recipes = [
        ray.put(replace(model_recipe(llm, url), budget=ticket))
        for url in settings.ray_endpoints or [None]
    ]
    busy = [0] * len(recipes)  # tasks in flight per endpoint
    nested = ray.get_runtime_context().get_task_id() is not None  # inside a Ray task
    run = RayMapRun(task_cpus=0 if nested else TASK_CPUS, endpoints=len(recipes))
    remote = _remote(ray, work, run.task_cpus)
    waiting = deque(batches)
    running: dict[Any, tuple[B, int]] = {}  # task reference -> (batch, endpoint)
    going, started = True, time.perf_counter()
    try:
        while waiting or running:
            while going and waiting and len(running) < settings.ray_max_in_flight:
                batch = waiting.popleft()
                slot = min(range(len(recipes)), key=lambda i: (busy[i], i))
                busy[slot] += 1
                running[remote.remote(recipes[slot], *args, batch)] = (batch, slot)
                run.tasks += 1
            if not running:
                break
            done, _ = ray.wait(list(running), num_returns=1)
            batch, slot = running.pop(done[0])
            busy[slot] -= 1
            try:
                out = ray.get(done[0])
            # BLE001: RayTaskError, WorkerCrashedError, ...: the stage decides.
            except Exception as exc:  # noqa: BLE001
                run.failed_tasks += 1
                going = on_lost(batch, exc) and going
                continue
            run.usage = run.usage + Usage.from_dict(out["usage"])
            going = on_result(batch, out) and going
    finally:
        for ref in running:
            ray.cancel(ref)
        if channel is not None:  # a grant no task settled stands at its reservation
            channel.close()
        run.seconds = round(time.perf_counter() - started, 3)
        report_index_usage(run.usage, config)
    return run


def budget_channel(ray: Any, guard: BudgetGuard | None) -> BudgetChannel | None:
    """A channel for the workers' calls to ``guard`` (``None`` without one) at the driver's Ray node
    address; on loopback where that address is not this machine's (a Ray client): a worker that
    cannot reach it then fails its task before any call, naming the channel."""
    if guard is None:
        return None
    try:
        return BudgetChannel(guard, host=ray.util.get_node_ip_address())
    except OSError:
        return BudgetChannel(guard)


def map_or_raise(
    work: Callable[..., dict[str, Any]],
    args: Sequence[Any],
    items: Sequence[T],
    batch_size: int,
    llm: BaseChatModel,
    settings: RaySettings,
    keep: Callable[[dict[str, Any]], None],
    what: str,
) -> RayMapRun:
    """:func:`map_on_ray` for a stage that must finish whole (an index build): ``items`` in batches
    of ``batch_size``; each finished task's result goes to ``keep`` as it returns, even when its
    batch failed part way (``"error"``, ``"traceback"``: what :func:`run_batch` gave the task); a
    failure or a task Ray lost stops the map, and the first error is raised once the tasks in flight
    have returned and been kept. ``what``: the items, named in the log and the errors."""
    batches = [list(items[j : j + batch_size]) for j in range(0, len(items), batch_size)]
    errors: list[BaseException] = []

    def on_result(batch: list[T], out: dict[str, Any]) -> bool:
        keep(out)
        if out["error"] is not None:
            log.warning("One of %s failed on a Ray worker:\n%s", what, out["traceback"])
            errors.append(out["error"])
        return not errors

    def on_lost(batch: list[T], exc: BaseException) -> bool:
        errors.append(
            RuntimeError(
                f"a Ray task of {len(batch)} {what} was lost: {type(exc).__name__}: "
                f"{str(exc)[:1000]}"
            )
        )
        return False

    run = map_on_ray(work, args, batches, llm, settings, on_result, on_lost)
    if errors:
        raise errors[0]
    return run


def report_index_usage(usage: Usage, config: RunnableConfig | None) -> None:
    """Report calls made on workers to the answer's usage, as index-time work (cached, reused by
    later questions); nothing to report, or no run listening (a direct call), sends nothing."""
    if usage == Usage() or (config is None and var_child_runnable_config.get() is None):
        return
    usage = replace(
        usage,
        index_llm_calls=usage.llm_calls,
        index_prompt_tokens=usage.prompt_tokens,
        index_completion_tokens=usage.completion_tokens,
    )
    dispatch_custom_event(USAGE_EVENT, asdict(usage), config=config)


__all__ = [
    "TASK_CPUS",
    "ModelRecipe",
    "RayMapRun",
    "RaySettings",
    "counted_model",
    "map_on_ray",
    "map_or_raise",
    "model_recipe",
    "portable_error",
    "report_index_usage",
    "run_batch",
]
