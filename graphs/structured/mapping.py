"""The Map stage's work on one document: its records, read once per (document, schema, model).

:func:`extract_document` (threads) and :func:`aextract_document` (coroutines) are the two
faces of the graph's ``extract`` node. Both go through the single flight of
:mod:`longctx.graphs.structured.flight` (one extraction of a document at a time across the
questions of a process, and, with the record cache, across processes) and share
everything else: what depends on the schema alone (the record validator, the function,
the prompt's fixed parts, the tool-bound model) is built once per schema key and model
(:func:`extractor`), not once per document.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from longctx.graphs.plugin.api import (
    Outcome,
    RecordCache,
    StrategyContext,
    TableSchema,
    acall_validated,
    call_validated,
    model_identity,
    prompt_codec,
)
from longctx.graphs.structured import prompts as P
from longctx.graphs.structured.config import StructuredConfig
from longctx.graphs.structured.extract import (
    bound_model,
    parse_records,
    quote_found,
    squeeze,
    windows,
)
from longctx.graphs.structured.flight import FLIGHTS, adocument_lock, await_flight, document_lock
from longctx.graphs.structured.functions import describe, records_function, records_model
from longctx.retrieval.contract import Document, Step


@dataclass
class Extractor:
    """What one schema key needs for every document: validator, function, prompt parts."""

    mode: str
    function: dict[str, Any] | None
    parse: Callable[[list[Any]], list[dict[str, Any]]]
    fixed: dict[str, str]
    template: str = P.EXTRACT_PROMPT
    _bound: dict[int, tuple[BaseChatModel, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def prompt(self, title: str, part: str, text: str) -> str:
        """The extraction prompt of one window."""
        return self.template.format(**self.fixed, title=title, part=part, text=text.strip())

    def model(self, llm: BaseChatModel) -> Any:
        """``llm`` with the function bound (tools mode), made once per model object."""
        with self._lock:
            found = self._bound.get(id(llm))
            if found is None or found[0] is not llm:
                if len(self._bound) > 16:
                    self._bound.clear()
                # llm kept: its id stays its own
                found = self._bound[id(llm)] = (
                    llm,
                    bound_model(llm, self.mode, self.function),
                )
            return found[1]


_EXTRACTORS: dict[tuple[str, str, str], Extractor] = {}
_EXTRACTORS_LOCK = threading.Lock()


def extractor(
    cache_key: str, schema_data: Mapping[str, Any], mode: str, order: str = "table_first"
) -> Extractor:
    """The :class:`Extractor` of a schema key (the key hashes the schema, prompts, mode and window)
    with the extraction template of ``order`` (``StructuredConfig.extract_order``)."""
    with _EXTRACTORS_LOCK:
        found = _EXTRACTORS.get((cache_key, mode, order))
    if found is not None:
        return found
    schema = TableSchema.model_validate(schema_data)
    period = schema.time.name if schema.time else "entity"
    if mode == "tools":
        how = P.EXTRACT_TOOLS
    else:
        names = ", ".join(a.name for a in schema.attributes)
        example = f'"{schema.attributes[0].name}": {{"value": "...", "quote": "..."}}'
        how = P.EXTRACT_JSON.format(
            period_example='"..."' if schema.time else "null", value_example=example, names=names
        )
    made = Extractor(
        mode=mode,
        function=records_function(schema),
        parse=parse_records(schema, records_model(schema)),
        fixed={
            "entity": schema.entity,
            "period": period,
            "table": schema.table,
            "columns": describe(schema),
            "how": how,
        },
        template=P.EXTRACT_TEMPLATES[order],
    )
    with _EXTRACTORS_LOCK:
        if len(_EXTRACTORS) > 64:
            _EXTRACTORS.clear()
        return _EXTRACTORS.setdefault((cache_key, mode, order), made)


def extraction_model(llm: BaseChatModel) -> str:
    """Whose records a cache entry holds: the model's name and a digest of every setting its
    requests carry (:func:`longctx.graphs.calls.request_settings.model_identity`), so a model that
    asks differently (another ``extra_body``, sampling, headers) reads every document anew instead
    of reusing another's records, while the same model behind another address reuses them."""
    return model_identity(llm)


class Job:
    """One ``extract`` task: the document, its flight key, and how its outcome becomes state."""

    def __init__(
        self,
        task: dict[str, Any],
        ctx: StrategyContext[StructuredConfig],
        cache: RecordCache | None,
        doc: Document | None = None,
    ):
        self.task, self.ctx, self.cfg = task, ctx, ctx.config
        # given: a Ray worker holds its batch alone
        self.doc = doc if doc is not None else ctx.corpus[task["doc_index"]]
        self.fingerprint = task["fingerprint"]
        self.cache = cache
        self.ex = extractor(
            task["cache_key"], task["schema"], task["tool_mode"], self.cfg.extract_order
        )
        self.model = extraction_model(ctx.llm)
        self.key = (
            str(cache.folder) if cache else None,
            task["cache_key"],
            self.model,
            self.fingerprint,
        )
        self.lock_folder: Path | None = cache.folder if cache else None

    def prompts(self) -> list[tuple[str, str]]:
        """``(window text, prompt)`` per window of the document."""
        if self.task.get("split", True):
            encode, decode = prompt_codec(self.ctx.llm)
            parts = windows(
                self.doc.text, self.task["window"], self.cfg.window_overlap, encode, decode
            )
        else:
            parts = [self.doc.text]
        n = len(parts)
        return [
            (text, self.ex.prompt(self.doc.title, f" (part {w + 1} of {n})" if n > 1 else "", text))
            for w, text in enumerate(parts)
        ]

    def call_options(self) -> dict[str, Any]:
        """The keyword arguments of every extraction call of this document."""
        cfg = self.cfg
        return {
            "retries": cfg.retries,
            "max_tokens": cfg.extract_max_tokens,
            "temperature": cfg.temperature,
        }

    def cached(self) -> dict[str, Any] | None:
        """The document's records in the cache, as a shareable result (written since ``map``
        looked); a degraded one only when the config does not ask to read it again."""
        hit = self.cache.get(self.fingerprint) if self.cache is not None else None
        if hit is None or (hit.get("failed_windows") and self.cfg.retry_degraded):
            return None
        return {
            "records": hit["records"],
            "windows": hit.get("windows", 1),
            "unverified_quotes": hit.get("unverified_quotes", 0),
            "failed_windows": hit.get("failed_windows", 0),
        }

    def finish(
        self, parts: list[tuple[str, str]], outs: list[Outcome[list[dict[str, Any]]]]
    ) -> dict[str, Any]:
        """The leader's result from its calls' outcomes (cached when every window gave a valid
        reply)."""
        records: list[dict[str, Any]] = []
        calls, errors, failed, unverified = 0, [], 0, 0
        for w, ((text, _), out) in enumerate(zip(parts, outs)):
            calls += out.attempts
            errors += [f"window {w}: {e}" for e in out.errors]
            if not out.ok or out.value is None:
                failed += 1
                continue
            squeezed = squeeze(text) if out.value else ""
            for rec in out.value:
                rec["window"] = w
                # kept with the record: reduce may drop, evidence marks what is not found
                for cell in rec["values"].values():
                    cell["quote_found"] = quote_found(
                        cell.get("quote") or "", text, squeezed=squeezed
                    )
                    unverified += not cell["quote_found"]
            records.extend(out.value)
        # a degraded extraction too, marked: a later question does not pay for it again
        if self.cache is not None:
            self.cache.put(
                self.fingerprint,
                records,
                windows=len(parts),
                calls=calls,
                doc_id=self.doc.doc_id,
                unverified_quotes=unverified,
                failed_windows=failed,
            )
        return {
            "records": records,
            "calls": calls,
            "windows": len(parts),
            "failed_windows": failed,
            "errors": errors,
            "unverified_quotes": unverified,
        }

    def state(self, result: dict[str, Any], *, shared: bool = False) -> dict[str, Any]:
        """The node's update: this document's extraction (``shared``: read by another task, no call
        made here)."""
        if shared:
            result = {
                "records": result["records"],
                "calls": 0,
                "windows": result["windows"],
                "failed_windows": result.get("failed_windows", 0),
                "errors": [],
                "unverified_quotes": result["unverified_quotes"],
                "shared": True,
            }
        out: dict[str, Any] = {"extractions": [{"doc_index": self.task["doc_index"], **result}]}
        if result["failed_windows"]:
            why = (
                "read degraded earlier (cached): its malformed windows gave no records; "
                "retry_degraded=True reads it again"
                if shared
                else (
                    "malformed after the retries: these windows gave no records (cached as "
                    "degraded; retry_degraded=True reads it again)"
                )
            )
            out["steps"] = [
                Step(
                    "extract",
                    doc_id=self.doc.doc_id,
                    title=self.doc.title,
                    windows=result["windows"],
                    failed_windows=result["failed_windows"],
                    calls=result["calls"],
                    errors=result["errors"],
                    degraded=why,
                )
            ]
        return out


def extract_document(
    task: dict[str, Any],
    ctx: StrategyContext[StructuredConfig],
    cache: RecordCache | None,
    doc: Document | None = None,
) -> dict[str, Any]:
    """One document's records (in windows when long), extracted here or by the task leading its
    flight (``doc``: the document itself, when ``ctx.corpus`` is not the whole corpus)."""
    job = Job(task, ctx, cache, doc)
    while True:
        leader, fut = FLIGHTS.join(job.key)
        if not leader:
            shared = fut.result()
            if shared is not None:
                return job.state(shared, shared=True)
            # The leader ended without records: try again (lead, or wait for the next leader).
            continue
        usable = None
        try:
            with document_lock(job.lock_folder, job.fingerprint):
                usable = job.cached()
                if usable is not None:
                    return job.state(usable, shared=True)
                parts, options, model = job.prompts(), job.call_options(), job.ex.model(ctx.llm)
                outs = [
                    call_validated(ctx.llm, model, prompt, job.ex.parse, **options)
                    for _, prompt in parts
                ]
                result = job.finish(parts, outs)
                usable = (
                    result if not (result["failed_windows"] and job.cfg.retry_degraded) else None
                )
                return job.state(result)
        finally:
            FLIGHTS.land(job.key, fut, usable)


async def aextract_document(
    task: dict[str, Any],
    ctx: StrategyContext[StructuredConfig],
    cache: RecordCache | None,
    *,
    gate: Any = None,
) -> dict[str, Any]:
    """:func:`extract_document` for a coroutine: the model's ``ainvoke``, waits without a thread
    (``gate``: an ``asyncio.Semaphore`` held around each model call)."""
    job = Job(task, ctx, cache)
    while True:
        leader, fut = FLIGHTS.join(job.key)
        if not leader:
            shared = await await_flight(fut)
            if shared is not None:
                return job.state(shared, shared=True)
            continue
        usable = None
        try:
            async with adocument_lock(job.lock_folder, job.fingerprint):
                usable = job.cached()
                if usable is not None:
                    return job.state(usable, shared=True)
                parts, options, model = job.prompts(), job.call_options(), job.ex.model(ctx.llm)
                outs = [
                    await acall_validated(
                        ctx.llm, model, prompt, job.ex.parse, gate=gate, **options
                    )
                    for _, prompt in parts
                ]
                result = job.finish(parts, outs)
                usable = (
                    result if not (result["failed_windows"] and job.cfg.retry_degraded) else None
                )
                return job.state(result)
        finally:
            FLIGHTS.land(job.key, fut, usable)


__all__ = ["Extractor", "Job", "aextract_document", "extract_document", "extractor"]
