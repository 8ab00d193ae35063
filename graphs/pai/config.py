"""PAI's settings; the paper's numbers (seed 002, App. A.2) where it gives them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from longctx.graphs.plugin.api import RetrievalSettings, option


@dataclass(frozen=True, kw_only=True)
class PaiConfig(RetrievalSettings):
    """PAI's settings; the paper's numbers where it gives them.

    Attributes:
        retriever / top_k: The candidate prefilter: each sub-question's top-K chunks by
            any registered retriever are judged instead of every chunk.
        judge_mode: ``"exhaustive"`` (the paper), ``"prefilter"``, or ``"auto"``:
            exhaustive while the corpus has at most ``exhaustive_max_tokens`` tokens.
        domain: Examples filled into the property schema; ``"auto"`` reads
            ``Question.metadata["domain"]`` (Loong's ``financial``/``legal``/``paper``).
        property_calls: How several properties come back: ``"parallel"`` tool calls of
            the paper's one-property function (default), or one call with a list.
        tool_mode: ``"tools"``, ``"json"`` (validated JSON text, for servers without
            tools) or ``"auto"`` (tools when the model implements ``bind_tools``).
        max_items: Properties (sub-questions) kept; extra ones are recorded, not judged.
        retries / judge_retries: Extra calls after a malformed extraction / verdict.
        on_malformed_judgment: Verdict used when a judge call stays malformed.
        sub_answer_context_tokens: Budget of kept-chunk tokens packed per sub-answer.
        concurrency: ``max_concurrency`` of the run: judge calls in flight at once.
        output: ``"cot"`` (the paper's reasoning + conclusion) or ``"conclusion"`` only.
        judge_order: ``"query_first"`` (the paper's judge prompt: the sub-question, then the chunk)
            or ``"chunk_first"`` (the chunk, then the sub-question: every judge call of one chunk
            starts alike, so a provider's prompt cache serves the chunk to the other sub-questions
            and questions).
    """

    retriever: str = option(
        "bm25", source="ours (no model download); the paper's RAG baseline used BGE-M3"
    )
    chunk_unit: Literal["words", "tokens"] = option(
        "tokens", source="seed 002 App. A.2: 1024-token chunks"
    )
    chunk_size: int = option(1024, min=1, source="seed 002 App. A.2: 1024-token chunks")
    top_k: int = option(50, min=1, source="prefilter K; seed 002 §4.4 RAG baseline K=50 on Loong")
    judge_mode: Literal["auto", "exhaustive", "prefilter"] = option(
        "auto", source="seed 002: exhaustive"
    )
    exhaustive_max_tokens: int = option(
        262_144, min=0, source="Loong Set4 <= 250K; LongFinanceQA keeps <= 256K"
    )
    domain: Literal["auto", "general", "finance", "legal", "academic"] = option(
        "auto", source="seed 002 App. A.2"
    )
    property_calls: Literal["parallel", "list"] = option(
        "parallel", source="Fig. 4: one {metric, subject} per call"
    )
    tool_mode: Literal["auto", "tools", "json"] = "auto"
    max_items: int = option(16, min=1, source="ours: bounds judge calls (Fig. 8 shows up to 5)")
    retries: int = option(2, min=0)
    judge_retries: int = option(1, min=0)
    on_malformed_judgment: Literal["drop", "keep"] = "drop"
    sub_answer_context_tokens: int = option(
        32_000, min=1, source="ours; GPT-4o-mini (the paper's agent) has 128K"
    )
    extract_max_tokens: int = option(512, min=1)
    judge_max_tokens: int = option(64, min=1)
    sub_answer_max_tokens: int = option(256, min=1)
    summary_max_tokens: int = option(512, min=1)
    temperature: float = option(0.0, min=0.0)
    concurrency: int = option(8, min=1, source="ours; raise for remote APIs (see bench_pai)")
    output: Literal["cot", "conclusion"] = "cot"
    judge_order: Literal["query_first", "chunk_first"] = option(
        "query_first", source="seed 002: the query, then the context"
    )
