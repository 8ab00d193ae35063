"""Settings of the structured strategy. There is no paper to reproduce (CorpusQA, seed 004,
builds its ground truth this way but ships no reader), so there is no ``paper`` preset;
each default names where it comes from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from longctx.graphs.plugin.api import ConfigError, RayMapOptions, option, parse_schema

#: Tokens kept free of the model window for a prompt's own text (the extraction and answer prompts).
PROMPT_OVERHEAD = 1_024


@dataclass(frozen=True, kw_only=True)
class StructuredConfig(RayMapOptions):
    """Plan (schema) -> Map (records per document) -> Reduce (one table) -> Query (SQL) -> answer.

    Attributes:
        schema: A fixed table schema (``TableSchema`` fields); skips the Plan call.
        reuse_schemas: Reuse a schema planned earlier on the same corpus when it covers the new one.
        known_tables: With ``reuse_schemas``, the most recent tables already filled from the
            corpus listed in the plan prompt, so the planner can name one again (0: none).
        max_attributes: Most attributes a planned schema may have (more is a validation error).
        window_tokens: Longest text one extraction call reads; longer documents are read in
            windows (capped by the model's window minus the prompt and the reply).
        window_overlap: Tokens repeated between consecutive windows (a row cut at a border).
        extract_order: ``"table_first"`` (the instructions and the table, then the document) or
            ``"document_first"`` (the document, then the instructions and the table: the extractions
            of one document for several tables start alike, so a provider's prompt cache serves the
            document to a later question's new table; own-corpus runs use it,
            :mod:`longctx.graphs.calls.prompt_sharing`).
        tool_mode: ``"tools"``, ``"json"`` or ``"auto"`` (tools when the model binds them).
        retries: Extra calls after a malformed plan or extraction (the error is shown).
        sql_retries: Extra SQL calls after an error (the message goes back to the model).
        sql_timeout_s: Wall-clock limit of one query (a watchdog interrupts the connection).
        sql_max_value_bytes: Longest string or blob a query may make (SQLite's
            ``SQLITE_LIMIT_LENGTH``).
        sql_heap_limit_mb: SQLite's hard heap limit while a query runs (the soft one at half;
            sorts and temporary tables are kept in memory under it). The limits are the whole
            process's, so they are set when a query starts and restored when it ends
            (``memory/records/heap_limit.py``; where ctypes cannot reach SQLite, the hard
            one stays lowered, with a warning).
        sample_rows / distinct_values: Rows and per-column distinct text values shown to the
            SQL writer.
        max_result_rows: Result rows kept (and shown to the final call).
        max_result_bytes: JSON bytes of result rows kept (the first row always is).
        max_cell_chars: A longer text cell of the result is cut, with a marker.
        answer_result_tokens: Most tokens of SQL result in the final prompt (the rows past it
            are named on a marker line); capped by the model's window less the answer budget.
        conflict_rule: Which document's value a cell keeps when several state it.
        unverified_values: ``"keep"`` or ``"drop"`` the values whose quote is not found in the
            text the model read (counted in the ``reduce`` step and marked in the evidence either
            way).
        cache: Keep records on disk per (document, schema, model) for later questions.
        retry_degraded: Read again the documents whose extraction degraded earlier (windows still
            malformed after the retries, cached as such with the records of their good windows);
            by default a later question reuses the degraded extraction and says so.
        concurrency: Extraction calls in flight at once, across the questions of a run (a gate
            per run on the async path; on the threaded path, extraction tasks in flight per
            question); with ``map_executor="ray"``, per Ray task.
        max_evidence: Cells returned as evidence.
        map_executor / ray_address / ray_max_in_flight / ray_endpoints: Where the Map stage
            extracts the documents missing from the record cache: this process (``Send`` fan-out)
            or Ray tasks (:class:`~graphs.runtime.ray_options.RayMapOptions`,
            :mod:`longctx.graphs.structured.ray_map`).
        ray_batch_documents: Documents per Ray task.
    """

    schema: Mapping[str, Any] | None = option(
        None, source="ours: a fixed schema for repeated analyses"
    )
    reuse_schemas: bool = option(True, source="issue 15: one schema may serve several questions")
    known_tables: int = option(
        5, min=0, source="ours: a few one-line tables keep the plan prompt short"
    )
    max_attributes: int = option(
        16, min=1, source="ours; CorpusQA questions read at most 4 fields plus 2 categoricals"
    )
    window_tokens: int = option(
        8_000,
        min=256,
        source="ours: one call per synthetic report (4K tokens); capped by the model window",
    )
    window_overlap: int = option(200, min=0, source="ours: a table row is under 200 tokens")
    extract_order: Literal["table_first", "document_first"] = option(
        "table_first", source="ours: the instructions first, as PAI's judge prompt"
    )
    tool_mode: Literal["auto", "tools", "json"] = option(
        "auto", source="as PAI (graphs/pai/config.py)"
    )
    retries: int = option(2, min=0, source="as PAI's retries (graphs/pai/config.py)")
    sql_retries: int = option(2, min=0, source="ours")
    sql_timeout_s: float = option(
        5.0, min=0.01, source="ours: a scan of thousands of rows takes milliseconds"
    )
    sample_rows: int = option(5, min=0, source="ours; DIN-SQL/DAIL-SQL show 3-5 rows")
    distinct_values: int = option(
        12, min=0, source="ours: categorical values the SQL must match exactly"
    )
    sql_max_value_bytes: int = option(
        1_000_000,
        min=1_000,
        source="ours: a cell is under 1 KB; a GROUP_CONCAT of thousands of names ~50 KB (issue 27)",
    )
    sql_heap_limit_mb: int = option(
        256,
        min=16,
        source="ours: a table of thousands of rows takes ~1 MB; issue 27's attacks took 5-8 GB",
    )
    max_result_rows: int = option(200, min=1, source="ours")
    max_result_bytes: int = option(
        65_536, min=1_024, source="ours: 200 rows of a few short cells are ~10 KB"
    )
    max_cell_chars: int = option(
        1_000, min=16, source="ours: a name, a number or a date is under 100 characters"
    )
    answer_result_tokens: int = option(4_000, min=64, source="ours: 200 short rows are ~3K tokens")
    conflict_rule: Literal["latest_document", "first_document"] = option(
        "latest_document", source="CorpusQA appendix C, rule 3"
    )
    unverified_values: Literal["keep", "drop"] = option(
        "keep",
        source=(
            "ours: a right value's quote may not be verbatim (a re-spaced table row); 'drop' "
            "keeps only values whose quote is found in the text read"
        ),
    )
    cache: bool = option(True, source="issue 15: records reused by later questions")
    retry_degraded: bool = option(
        False,
        source=(
            "issue 31: a degraded extraction is cached as such; True reads those documents again"
        ),
    )
    plan_max_tokens: int = option(
        1_024, min=1, source="ours: a 16-attribute schema is ~600 tokens of JSON"
    )
    extract_max_tokens: int = option(2_048, min=1, source="ours: ~25 values with quotes per report")
    sql_max_tokens: int = option(
        512, min=1, source="ours: a CorpusQA-style query (filter, group, rank) is under 200 tokens"
    )
    answer_max_tokens: int = option(
        256, min=1, source="the final call uses the benchmark's budget when it has one"
    )
    temperature: float = option(
        0.0,
        min=0.0,
        max=2.0,
        source=(
            "CorpusQA src/infer.py: temperature 0.0; the final call takes the benchmark's when "
            "it sets one"
        ),
    )
    concurrency: int = option(
        8, min=1, source="as PAI; raise for remote APIs (bench_structured uses 32)"
    )
    max_evidence: int = option(
        50, min=0, source="ours: the cells behind a top-10 answer over a few years"
    )
    ray_batch_documents: int = option(
        16,
        min=1,
        source=(
            "ours: a task's fixed cost (model and tokenizer built on the worker) over two rounds "
            "of 8 calls"
        ),
    )

    def check(self) -> None:
        super().check()
        if self.window_overlap * 2 >= self.window_tokens:
            raise ConfigError(
                f"Option 'window_overlap' ({self.window_overlap}) must be under half of "
                f"'window_tokens' ({self.window_tokens})"
            )
        if self.schema is not None:
            try:
                parse_schema(dict(self.schema))
            except ValueError as exc:
                raise ConfigError(f"Option 'schema' is not a valid table schema: {exc}") from None
