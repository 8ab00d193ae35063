"""MemAgent's cost model: ceil(T / chunk_tokens) + 1 calls per question, chunks cut as a run cuts
them."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel

from longctx.graphs.memagent.config import MemAgentConfig
from longctx.graphs.memagent.prompts import FINAL_TEMPLATE, MEMORY_TEMPLATE, final_instruction
from longctx.graphs.memagent.stream import memagent_chunks
from longctx.graphs.plugin.api import (
    ANSWER_TOKENS,
    PLACEHOLDER_QUESTION,
    SEAM_TOKENS,
    Calls,
    CorpusShape,
    CostPlan,
    Costs,
    ExpectedCost,
    prompt_tokens,
)
from longctx.retrieval.contract import Question


def memagent_costs(
    cfg: MemAgentConfig,
    shape: CorpusShape,
    questions: Sequence[Question],
    *,
    llm: BaseChatModel | None = None,
    window: int | None = None,
) -> Costs:
    """ceil(T / chunk_tokens) + 1 calls per question: one memory update per chunk, one final answer.

    Chunks are cut as a run cuts them where the corpus is known (else ``chunk_tokens`` each); each
    call also carries the memory, up to ``max_new_tokens``. Typically the memory is re-read at its
    budget and each update rewrites it, then a short answer.
    """
    if shape.corpus is not None:
        sizes = memagent_chunks(cfg, shape.corpus, questions, llm)
    else:
        whole, rest = divmod(shape.tokens, cfg.chunk_tokens)
        sizes = (cfg.chunk_tokens,) * whole + ((rest,) if rest or not whole else ())
    n, k = len(sizes), len(questions)
    benchmark = cfg.final_instruction == "benchmark"
    # per question: one update's and the final call's text beyond the chunk and the memory
    updates, finals, reads = (
        [],
        [],
        [],
    )
    for x in questions or [PLACEHOLDER_QUESTION]:
        problem = x.render().strip()
        updates.append(
            prompt_tokens(
                "memagent",
                "update",
                functools.partial(MEMORY_TEMPLATE.format, prompt=problem, memory="", chunk=""),
                llm,
                x,
            )
        )
        finals.append(
            prompt_tokens(
                "memagent",
                f"final:{cfg.final_instruction}",
                functools.partial(
                    FINAL_TEMPLATE.format,
                    instruction=final_instruction(x.instruction if benchmark else None),
                    prompt=problem,
                    memory="",
                ),
                llm,
                x,
            )
        )
        reads.append(n * updates[-1] + finals[-1])
    seam = SEAM_TOKENS  # chunk and memory in each update, the memory in the final call
    read = sum(sizes) + max(reads) + (2 * n + 1) * seam
    memory = (n + 1) * cfg.max_new_tokens
    # at least, step by step (a resumed run's plan counts only the steps it has left): each
    # question's update of each chunk, then each question's final call, the memory empty
    steps = tuple(
        (k, sum(max(0, size + u - 2 * seam) for u in updates[:k]), k * cfg.max_new_tokens)
        for size in sizes
    ) + (
        (
            k,
            sum(max(0, f - seam) for f in finals[:k]),
            sum(x.answer_budget(cfg.max_new_tokens) for x in questions),
        ),
    )
    bounds = CostPlan(
        strategy="memagent",
        questions=k,
        calls=k * (n + 1),
        max_calls=k * (n + 1),
        prompt_tokens=sum(p for _, p, _ in steps),
        max_prompt_tokens=k * (read + memory),
        completion_tokens=sum(t for _, _, t in steps),
        formula=f"(ceil(T/{cfg.chunk_tokens:,}) + 1) calls per question: {n:,} chunks + 1",
        details={"chunks": n},
        steps=steps,
    )
    typical = Calls(n + 1, read + memory, n * cfg.max_new_tokens + ANSWER_TOKENS)
    return Costs(bounds, ExpectedCost(typical))
