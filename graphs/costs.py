"""Each built-in strategy's cost plan: model calls and prompt tokens from the corpus size and its config.

The formulas are the README's ("calls per question" of the strategy table, and PAI's cost
model); token counts are estimates: the corpus in cl100k tokens (MemAgent's chunks in the
model's own tokens, as it cuts them), the question, and :data:`TEMPLATE_TOKENS` of prompt
template per call. A plan function is ``(cfg, corpus, questions, llm) -> CostPlan`` and is
registered on the strategy (``STRATEGIES.register(..., cost_plan=...)``); ``llm`` may be ``None``
(a plan made before a model is chosen: cl100k and the config's default window).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from graphs.budget import CostPlan
from retrieval.contract import Corpus, Question

#: Prompt tokens of a call's template and instructions beyond the corpus text and the question (estimate).
TEMPLATE_TOKENS = 200
#: cl100k tokens per English word (chunk sizes given in words).
TOKENS_PER_WORD = 4 / 3


def _tokens_of(size: int, unit: str) -> int:
    return math.ceil(size * TOKENS_PER_WORD) if unit == "words" else size


def _question_tokens(questions: Sequence[Question]) -> int:
    from retrieval.tokens import count_tokens

    return max((count_tokens(q.render()) for q in questions), default=0)


def _single(strategy: str, questions: Sequence[Question], calls: int, max_calls: int, prompt: int, max_prompt: int, completion: int,
            formula: str, **details: Any) -> CostPlan:  # fmt: skip
    """A per-question plan scaled to every question (single-question strategies run the plan once each)."""
    return CostPlan(strategy, 1, calls, max_calls, prompt, max_prompt, completion, formula, details).scaled(len(questions))


def rag_plan(cfg: Any, corpus: Corpus, questions: Sequence[Question], llm: Any = None) -> CostPlan:
    """1 call with ``top_k`` chunks (at most the corpus)."""
    q = _question_tokens(questions)
    context = min(corpus.num_tokens, cfg.top_k * _tokens_of(cfg.chunk_size, cfg.chunk_unit))
    prompt = context + q + TEMPLATE_TOKENS
    budget = max((x.answer_budget(cfg.max_new_tokens) for x in questions), default=cfg.max_new_tokens)
    return _single("rag", questions, 1, 1, prompt, prompt, budget, "1 call of top_k chunks")


def full_context_plan(cfg: Any, corpus: Corpus, questions: Sequence[Question], llm: Any = None) -> CostPlan:
    """1 call of min(T, window input budget) tokens."""
    from graphs.full_context.graph import input_budget
    from graphs.llm import context_window

    window = cfg.context_window or (context_window(llm, cfg.default_context_window) if llm is not None else cfg.default_context_window)
    q = _question_tokens(questions)
    first = questions[0] if questions else Question("")
    prompt = min(corpus.num_tokens + q + TEMPLATE_TOKENS, input_budget(window, first, cfg))
    return _single("full_context", questions, 1, 1, prompt, prompt, first.answer_budget(cfg.max_new_tokens),
                   f"1 call of min(T, window) tokens, window {window:,}")  # fmt: skip


def memagent_chunks(cfg: Any, corpus: Corpus, questions: Sequence[Question], llm: Any = None) -> tuple[int, ...]:
    """Token sizes of the chunks MemAgent reads (cut as :func:`graphs.memagent.graph.prepare_context` cuts them)."""
    from graphs.llm import tokenizer_for
    from graphs.memagent.graph import stream_text
    from retrieval.tokenizers import split_ids, tiktoken_tokenizer

    text, _ = stream_text(corpus, questions, cfg.stream)
    tokenizer = tokenizer_for(llm) if llm is not None else tiktoken_tokenizer("cl100k_base")
    return tuple(n for _, n in split_ids(text, cfg.chunk_tokens, tokenizer))


def memagent_plan(cfg: Any, corpus: Corpus, questions: Sequence[Question], llm: Any = None) -> CostPlan:
    """ceil(T / chunk_tokens) + 1 calls per question: one memory update per chunk, one final answer."""
    sizes = memagent_chunks(cfg, corpus, questions, llm)
    n, k = len(sizes), len(questions)
    q = _question_tokens(questions)
    prompt = k * (sum(sizes) + (n + 1) * (q + TEMPLATE_TOKENS))
    memory = k * (n + 1) * cfg.max_new_tokens  # each call also carries the memory, up to max_new_tokens
    completion = k * (n * cfg.max_new_tokens + max((x.answer_budget(cfg.max_new_tokens) for x in questions), default=0))
    return CostPlan("memagent", k, k * (n + 1), k * (n + 1), prompt, prompt + memory, completion,
                    f"(ceil(T/{cfg.chunk_tokens:,}) + 1) calls per question: {n:,} chunks + 1", {"chunks": n})  # fmt: skip


def pai_plan(cfg: Any, corpus: Corpus, questions: Sequence[Question], llm: Any = None, *, strategy: str = "pai") -> CostPlan:
    """Properties, then N_p x C judge calls (exhaustive) or N_p x min(K, C) (prefilter), N_p sub-answers, 1 summary."""
    from graphs.pai.graph import choose_mode

    t = corpus.num_tokens
    chunk = _tokens_of(cfg.chunk_size, cfg.chunk_unit)
    c = max(1, math.ceil(t / chunk))
    mode = choose_mode(cfg, t)
    judged = c if mode == "exhaustive" else min(cfg.top_k, c)
    q = _question_tokens(questions)
    judge_prompt = min(chunk, t) + q + TEMPLATE_TOKENS
    n_max = cfg.max_items
    sub_prompt = min(t, cfg.sub_answer_context_tokens) + q + TEMPLATE_TOKENS
    # at least: one decomposition call, one property judged over its chunks, its sub-answer, the summary
    calls = 1 + judged + 1 + 1
    prompt = (q + TEMPLATE_TOKENS) + judged * judge_prompt + sub_prompt + (q + TEMPLATE_TOKENS)
    # at most: decomposition retried, max_items properties, every judge retried, sub-answers, summary
    max_calls = (1 + cfg.retries) + n_max * judged * (1 + cfg.judge_retries) + n_max + 1
    max_prompt = (1 + cfg.retries) * (q + TEMPLATE_TOKENS) + n_max * judged * (1 + cfg.judge_retries) * judge_prompt + n_max * sub_prompt + q + TEMPLATE_TOKENS
    completion = cfg.extract_max_tokens + judged * cfg.judge_max_tokens + cfg.sub_answer_max_tokens + cfg.summary_max_tokens
    formula = f"N_p x {judged:,} judge calls ({mode}: {'C = T/' + str(chunk) if mode == 'exhaustive' else 'min(K, C)'}), N_p 1-{n_max}, + N_p sub-answers + 2"
    return _single(strategy, questions, calls, max_calls, prompt, max_prompt, completion, formula, judged_chunks=judged, mode=mode)


def pai_minus_plan(cfg: Any, corpus: Corpus, questions: Sequence[Question], llm: Any = None) -> CostPlan:
    """PAI's plan (sub-questions generated directly instead of properties: the same counts)."""
    return pai_plan(cfg, corpus, questions, llm, strategy="pai_minus")


def self_ask_plan(cfg: Any, corpus: Corpus, questions: Sequence[Question], llm: Any = None) -> CostPlan:
    """Up to ``max_iterations`` generator calls (FlashRAG); the reader variant also answers each follow-up."""
    q = _question_tokens(questions)
    prompt = min(corpus.num_tokens, cfg.top_k * _tokens_of(cfg.chunk_size, "words")) + q + TEMPLATE_TOKENS
    if cfg.variant == "flashrag":
        least, most = min(1, cfg.max_iterations), cfg.max_iterations
        formula = f"1 to max_iterations ({cfg.max_iterations}) generator calls"
    else:
        least, most = 1, 2 * cfg.max_iterations + 2
        formula = f"1 to 2 x max_iterations + 2 ({most}) calls"
    per_call = cfg.max_new_tokens
    return _single("self_ask", questions, least, most, least * prompt, most * prompt, least * per_call, formula)


def self_route_plan(cfg: Any, corpus: Corpus, questions: Sequence[Question], llm: Any = None) -> CostPlan:
    """1 RAG call; a declined question adds its fallback's plan (full context: 1 call; memagent: ceil(T/5000) + 1)."""
    from graphs import STRATEGIES

    q = _question_tokens(questions)
    prompt = min(corpus.num_tokens, cfg.top_k * _tokens_of(cfg.chunk_size, "words")) + q + TEMPLATE_TOKENS
    spec = STRATEGIES.get(cfg.fallback)
    fallback = spec.cost_plan(spec.make_config(**dict(cfg.fallback_options)), corpus, questions[:1] or [Question("")], llm)
    return _single("self_route", questions, 1, 1 + fallback.max_calls, prompt, prompt + fallback.max_prompt_tokens, cfg.max_new_tokens,
                   f"1 call when RAG answers; + {cfg.fallback} ({fallback.max_calls:,}) when it declines")  # fmt: skip


def structured_plan(cfg: Any, corpus: Corpus, questions: Sequence[Question], llm: Any = None) -> CostPlan:
    """A schema plan (none with a fixed schema), one extraction per document window, SQL, the answer.

    Records already extracted for this schema are reused by later questions, so a run over a
    cached corpus makes fewer calls than this plan (which counts every window once).
    """
    step = max(1, cfg.window_tokens - cfg.window_overlap)
    windows = sum(max(1, math.ceil(max(n - cfg.window_overlap, 1) / step)) for n in corpus.token_counts)
    plan_calls = 0 if cfg.schema else 1
    q = _question_tokens(questions)
    k = len(questions)
    calls = plan_calls + windows + k * 2
    max_calls = plan_calls * (1 + cfg.retries) + windows * (1 + cfg.retries) + k * (1 + cfg.sql_retries + 1)
    extract = corpus.num_tokens + windows * (cfg.window_overlap + q + TEMPLATE_TOKENS)
    per_question = 2 * (q + TEMPLATE_TOKENS) + cfg.answer_result_tokens
    prompt = plan_calls * (q + TEMPLATE_TOKENS) + extract + k * per_question
    max_prompt = plan_calls * (1 + cfg.retries) * (q + TEMPLATE_TOKENS) + (1 + cfg.retries) * extract + k * (per_question + cfg.sql_retries * (q + TEMPLATE_TOKENS))
    completion = plan_calls * cfg.plan_max_tokens + windows * cfg.extract_max_tokens + k * (cfg.sql_max_tokens + cfg.answer_max_tokens)
    return CostPlan("structured", k, calls, max_calls, prompt, max_prompt, completion,
                    f"{plan_calls} plan + {windows:,} document windows + SQL + answer per question (cached records: fewer)",
                    {"windows": windows})  # fmt: skip
