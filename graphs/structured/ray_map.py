"""The Map stage on Ray (``map_executor="ray"``): the documents missing from the record cache
are extracted by Ray tasks, a batch of documents per task, at most ``ray_max_in_flight``
tasks at once per answer.

A task runs on a worker what the local ``extract`` node runs (:func:`~graphs.structured.mapping.extract_document`,
its batch on ``concurrency`` threads): the same single flight, the same per-document lock
in the cache folder and the same record log (the caller's cache folder, passed by path), so
a document is extracted once whoever asks, ``reduce`` reads what the tasks stored, and a
killed run resumes from the log. The caller's chat model travels to the workers as a
:class:`ModelRecipe`: an OpenAI-client model (whose HTTP clients do not pickle) is rebuilt
from its spec (``openai:MODEL`` on the same base URL; the API key comes from the worker's
``OPENAI_API_KEY``, never shipped), any other model is pickled as is.

Failures: a document whose extraction raised on the worker raises in the caller once the
tasks in flight have finished (as the local fan-out raises; what finished is cached); a task
that Ray itself lost (worker died, arguments that did not unpickle) makes each of its
documents an ``extract`` step marked ``degraded`` with no records, not cached, exactly as a
locally malformed document, so the answer goes on and a rerun extracts them.

The workers' model calls are not seen by the caller's callbacks: each task counts them and
the caller reports the sum as a :data:`~graphs.usage.USAGE_EVENT`, so the answer's usage
holds them.
"""

from __future__ import annotations

import logging
import os
import pickle
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from langchain_core.callbacks import dispatch_custom_event
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig

from graphs.context import StrategyContext
from graphs.events import report_progress
from graphs.llm import set_tokenizer, tokenizer_for, tokenizer_spec
from graphs.run_config import with_handler
from graphs.structured.config import StructuredConfig
from graphs.structured.mapping import extract_document, extraction_model
from graphs.structured.stores import store_root
from graphs.usage import USAGE_EVENT, UsageTracker
from memory.records.cache import RecordCache
from retrieval.contract import Document, Step, Usage
from retrieval.ray_support import ensure_ray

log = logging.getLogger(__name__)

#: CPUs Ray reserves per extraction task (its calls wait on the network; parsing is light). Zero
#: when the answer itself runs in a Ray task (``longctx run --ray`` with ``map_executor="ray"``):
#: Ray yields a task's CPU only while its main thread blocks, and LangGraph runs the node on
#: another, so tasks that needed a CPU could wait forever for the ones their callers hold.
TASK_CPUS = 1.0
#: Retries of a task Ray lost (worker or node died); the documents it had finished are read from the cache.
TASK_RETRIES = 1


#: ``ChatOpenAI`` fields that go into its request bodies, carried to the workers' rebuilt models.
REQUEST_FIELDS = ("extra_body", "temperature", "top_p", "seed", "stop", "frequency_penalty", "presence_penalty", "logit_bias", "logprobs",
                  "top_logprobs", "n", "max_tokens", "reasoning_effort", "use_responses_api", "stream_usage")  # fmt: skip


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

    def build(self) -> BaseChatModel:
        """The chat model on this worker."""
        if self.model is not None:
            return self.model
        if self.model_class is None:
            raise ValueError("ModelRecipe needs a model or a model_class")
        api_key = (
            os.environ.get("OPENAI_API_KEY") or "not-needed"
        )  # a local server ignores it, as make_chat_model does
        llm = self.model_class(model=self.name, api_key=api_key, **self.options)
        return set_tokenizer(llm, self.tokenizer) if self.tokenizer else llm


def model_recipe(llm: BaseChatModel, base_url: str | None = None) -> ModelRecipe:
    """The :class:`ModelRecipe` of ``llm`` (an OpenAI-client model: on ``base_url`` when given);
    a model that neither pickles nor is an OpenAI-client model is a ``TypeError``, as is a
    ``base_url`` for a model that is not an OpenAI-client one."""
    if getattr(llm, "root_client", None) is not None and getattr(
        llm, "model_name", None
    ):  # langchain_openai's ChatOpenAI
        openai: Any = llm  # its class is not imported here (agents imports graphs): read its fields duck-typed
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
        for name in (
            REQUEST_FIELDS
        ):  # what the caller's requests carry, so a worker's requests are the same
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
            f"ray_endpoints needs an OpenAI-compatible chat model ('openai:MODEL'), not {type(llm).__name__}"
        )
    from ray import cloudpickle

    try:
        cloudpickle.dumps(llm)
    except Exception as exc:  # noqa: BLE001 - any pickling failure means the same thing here
        raise TypeError(
            f"map_executor='ray' sends the chat model to Ray workers, but {type(llm).__name__} does not pickle "
            f"({type(exc).__name__}: {exc}); use an 'openai:MODEL' or 'embedded' model, or map_executor='local'"
        ) from exc
    return ModelRecipe(model=llm)


def _portable_error(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling (it goes back to the caller), else a ``RuntimeError`` naming it."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def extract_batch(
    recipe: ModelRecipe,
    cfg: StructuredConfig,
    root: str | None,
    model: str,
    batch: Sequence[tuple[dict[str, Any], Document]],
) -> dict[str, Any]:
    """One Ray task: the documents of ``batch`` (``(task, document)`` pairs of one schema key)
    extracted on ``cfg.concurrency`` threads into the record log of (``root``, key, ``model``).

    Returns ``{"results": [node update or {"doc_index", "error"}], "usage": Usage fields}``.
    """
    tracker = UsageTracker()
    built = recipe.build()
    llm = built.model_copy(
        update={"callbacks": with_handler(built.callbacks, tracker)}
    )  # this task's calls, counted
    tracker.count = tokenizer_for(llm).count
    ctx = StrategyContext(llm=llm, config=cfg, corpus=None, cache_dir=Path(root) if root else None)  # type: ignore[arg-type]  # documents come with the tasks
    cache = (
        RecordCache(store_root(root), batch[0][0]["cache_key"], model) if root else None
    )  # the caller's model id: the caller's log

    def one(item: tuple[dict[str, Any], Document]) -> dict[str, Any]:
        task, doc = item
        try:
            return extract_document(task, ctx, cache, doc)
        except Exception as exc:  # noqa: BLE001 - raised in the caller, after the other documents
            # an OpenAI-client model already raises ChatModelError (server, status, retries)
            return {
                "doc_index": task["doc_index"],
                "error": _portable_error(exc),
                "traceback": traceback.format_exc(limit=6)[-3000:],
            }

    with ThreadPoolExecutor(max_workers=max(1, min(cfg.concurrency, len(batch)))) as pool:
        results = list(pool.map(one, batch))
    return {"results": results, "usage": asdict(tracker.usage)}


def lost_document(task: dict[str, Any], doc: Document, why: str) -> dict[str, Any]:
    """The node update of a document whose Ray task was lost: no records, one failed window, degraded."""
    extraction = {
        "doc_index": task["doc_index"],
        "records": [],
        "calls": 0,
        "windows": 1,
        "failed_windows": 1,
        "errors": [why],
        "unverified_quotes": 0,
    }
    step = Step(
        "extract",
        doc_id=doc.doc_id,
        title=doc.title,
        windows=1,
        failed_windows=1,
        calls=0,
        errors=[why],
        executor="ray",
        degraded="its Ray task failed: no records (not cached; a rerun extracts it)",
    )
    return {"extractions": [extraction], "steps": [step]}


def cached_document(task: dict[str, Any], hit: dict[str, Any]) -> dict[str, Any]:
    """The node update of a document found in the record log (stored by a task lost after it)."""
    return {
        "extractions": [
            {
                "doc_index": task["doc_index"],
                "records": hit["records"],
                "calls": 0,
                "windows": hit.get("windows", 1),
                "failed_windows": 0,
                "errors": [],
                "unverified_quotes": hit.get("unverified_quotes", 0),
                "shared": True,
            }
        ]
    }


_REMOTES: dict[float, Any] = {}


def _remote(ray: Any, cpus: float) -> Any:
    """:func:`extract_batch` as a Ray remote function reserving ``cpus`` (made once per process)."""
    if cpus not in _REMOTES:
        _REMOTES[cpus] = ray.remote(num_cpus=cpus, max_retries=TASK_RETRIES)(extract_batch)
    return _REMOTES[cpus]


def run_on_ray(
    tasks: list[dict[str, Any]],
    ctx: StrategyContext[StructuredConfig],
    cache: RecordCache | None,
    root: Path | None,
    config: RunnableConfig | None = None,
) -> dict[str, Any]:
    """The ``extract`` updates of ``tasks`` (the local node's task dicts), made by Ray tasks.

    ``cache``: the caller's record cache under the cache folder ``root`` (both ``None`` with
    ``cache=False``); the tasks write into the same log, and a complete record that is not in
    it afterwards (its task ran on another node, with its own disk) is appended here.
    ``config``: the node's run config, whose callbacks get the workers' usage.
    """
    cfg: StructuredConfig = ctx.config
    ray = ensure_ray(cfg.ray_address)
    recipes = [ray.put(model_recipe(ctx.llm, url)) for url in cfg.ray_endpoints] or [
        ray.put(model_recipe(ctx.llm))
    ]
    busy = [0] * len(recipes)  # tasks in flight per endpoint
    nested = (
        ray.get_runtime_context().get_task_id() is not None
    )  # inside a Ray task (a worker of the runner)
    cpus = 0 if nested else TASK_CPUS
    remote = _remote(ray, cpus)
    where = str(Path(root).resolve()) if cache is not None and root is not None else None
    model = cache.model if cache is not None else extraction_model(ctx.llm)
    docs = ctx.corpus.documents
    n = cfg.ray_batch_documents
    waiting = deque(
        [(t, docs[t["doc_index"]]) for t in tasks[i : i + n]] for i in range(0, len(tasks), n)
    )
    running: dict[Any, tuple[list[tuple[dict[str, Any], Document]], int]] = {}
    extractions: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    usage = Usage()
    errors: list[BaseException] = []
    started, submitted, lost = time.perf_counter(), 0, 0
    try:
        while waiting or running:
            while waiting and len(running) < cfg.ray_max_in_flight and not errors:
                batch = waiting.popleft()
                slot = min(range(len(recipes)), key=lambda i: (busy[i], i))
                busy[slot] += 1
                running[remote.remote(recipes[slot], cfg, where, model, batch)] = (batch, slot)
                submitted += 1
            if not running:
                break
            done, _ = ray.wait(list(running), num_returns=1)
            batch, slot = running.pop(done[0])
            busy[slot] -= 1
            report_progress("extract", advance=len(batch))
            try:
                out = ray.get(done[0])
            except Exception as exc:  # noqa: BLE001 - RayTaskError, WorkerCrashedError, ...: the batch's documents degrade
                lost += 1
                why = f"Ray task failed: {type(exc).__name__}: {str(exc)[:1000]}"
                if cache is not None:
                    cache.refresh()  # what the task stored before it was lost
                for task, doc in batch:
                    hit = (
                        cache.get(task["fingerprint"], refresh=False) if cache is not None else None
                    )
                    part = (
                        lost_document(task, doc, why) if hit is None else cached_document(task, hit)
                    )
                    extractions += part["extractions"]
                    steps += part.get("steps", [])
                continue
            usage = usage + Usage.from_dict(out["usage"])
            for result in out["results"]:
                if "error" in result:
                    log.warning(
                        "Extraction of document %s failed on a Ray worker:\n%s",
                        docs[result["doc_index"]].doc_id,
                        result["traceback"],
                    )
                    errors.append(result["error"])
                    continue
                extractions += result["extractions"]
                steps += result.get("steps", [])
    finally:
        for ref in running:
            ray.cancel(ref)
        if (
            usage != Usage() and config is not None
        ):  # extraction is index-time work (cached, reused by later questions)
            usage = replace(
                usage,
                index_llm_calls=usage.llm_calls,
                index_prompt_tokens=usage.prompt_tokens,
                index_completion_tokens=usage.completion_tokens,
            )
            dispatch_custom_event(USAGE_EVENT, asdict(usage), config=config)
    if cache is not None:
        _store_missing(
            cache,
            extractions,
            {t["doc_index"]: (t["fingerprint"], docs[t["doc_index"]].doc_id) for t in tasks},
        )
    if errors:
        raise errors[0]
    summary = Step(
        "extract_ray",
        documents=len(tasks),
        tasks=submitted,
        failed_tasks=lost,
        batch_documents=n,
        endpoints=max(1, len(cfg.ray_endpoints)),
        max_in_flight=cfg.ray_max_in_flight,
        task_cpus=cpus,
        calls=usage.llm_calls,
        seconds=round(time.perf_counter() - started, 3),
    )
    return {"extractions": extractions, "steps": [summary, *steps]}


def _store_missing(
    cache: RecordCache, extractions: list[dict[str, Any]], keys: dict[int, tuple[str, str]]
) -> None:
    """Append the complete extractions the caller's log lacks (their task ran on another node's disk)."""
    cache.refresh()
    for e in extractions:
        fingerprint, doc_id = keys[e["doc_index"]]
        if not e["failed_windows"] and cache.get(fingerprint, refresh=False) is None:
            cache.put(
                fingerprint,
                e["records"],
                windows=e["windows"],
                calls=e["calls"],
                doc_id=doc_id,
                unverified_quotes=e["unverified_quotes"],
            )


__all__ = [
    "ModelRecipe",
    "cached_document",
    "extract_batch",
    "lost_document",
    "model_recipe",
    "run_on_ray",
]
