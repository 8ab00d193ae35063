"""``answer(corpus, question)``: the single entry point every user and experiment goes through."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from agents.chat_models import as_chat_model_error, describe, make_chat_model
from agents.types import Answer, Evidence
from agents.usage import UsageTracker
from graphs import STRATEGIES, Question, StrategyContext, as_question
from retrieval import Corpus, Index


def answer(
    corpus: Corpus,
    question: str | Question,
    *,
    strategy: str = "rag",
    llm: str | BaseChatModel | None = None,
    preset: str | None = None,
    cache_dir: str | Path | None = None,
    show_progress: bool = False,
    **config: Any,
) -> Answer:
    """Answer ``question`` over ``corpus`` with one strategy.

    Args:
        corpus: The documents to answer over.
        question: A string, or a :class:`~graphs.Question` with choices and an
            output-format instruction.
        strategy: A registered strategy name (``rag``, ``full_context``, ...).
        llm: A chat model, a spec (``"embedded"``, ``"openai:MODEL"``), or ``None`` for
            ``$LONGCTX_LLM`` / the embedded default.
        preset: A named config of the strategy (e.g. ``"longbench-500x3"`` for ``rag``).
        cache_dir: Root of the index cache (default ``~/.cache/longctx``).
        show_progress: Progress bars while indexing.
        **config: Fields of the strategy's config (e.g. ``top_k=5``, ``retriever="dense"``);
            unknown names raise ``TypeError``.

    Returns:
        The :class:`~agents.types.Answer` with evidence, usage and steps.

    Raises:
        ChatModelError: The chat model's server does not answer or rejects the key.
    """
    _check_corpus(corpus)
    started = time.perf_counter()
    spec = STRATEGIES.get(strategy)
    cfg = spec.make_config(preset, **config)
    q = as_question(question)
    chat = make_chat_model(llm)
    if spec.batched:
        return _run_batched(spec, corpus, [q], chat, cfg, cache_dir, show_progress)[0]
    index = None
    if spec.uses_index:
        index = index_for(corpus, cfg, cache_dir=cache_dir, show_progress=show_progress)
    index_seconds = time.perf_counter() - started
    tracker = UsageTracker()
    run_config = {
        "callbacks": [tracker],
        "run_name": f"longctx.{strategy}",
        "tags": trace_tags(strategy, q),
        "metadata": {"strategy": strategy, "corpus": corpus.fingerprint[:16], **dict(q.metadata)},
    }
    context = StrategyContext(llm=chat, config=cfg, corpus=corpus, index=index, cache_dir=Path(cache_dir) if cache_dir else None)
    try:
        final = spec.build_graph(cfg).invoke({"question": q, "steps": []}, context=context, config=run_config)
    except Exception as exc:
        explained = _explain(exc, chat)
        if explained is exc:
            raise
        raise explained from exc
    usage = tracker.usage
    usage.seconds = time.perf_counter() - started
    usage.index_seconds = index_seconds
    return Answer(
        answer=final.get("answer", ""),
        raw=final.get("raw", ""),
        evidence=[_evidence(h) for h in final.get("hits", [])],
        usage=usage,
        steps=final.get("steps", []),
        strategy=strategy,
        question=q,
        config={"strategy": strategy, "llm": describe(chat), **dataclasses.asdict(cfg)},
    )


def answer_many(
    corpus: Corpus,
    questions: list[str | Question],
    *,
    strategy: str = "memagent",
    llm: str | BaseChatModel | None = None,
    preset: str | None = None,
    cache_dir: str | Path | None = None,
    show_progress: bool = True,
    concurrency: int = 4,
    **config: Any,
) -> list[Answer]:
    """Answer several questions over one corpus, in order of ``questions``.

    Batched strategies (``memagent``) advance all questions over each chunk together and
    send their calls as one concurrent batch (bounded by the config's ``concurrency``);
    the run is checkpointed and resumes after a crash. Other strategies build their
    index once and answer ``concurrency`` questions at a time.
    """
    _check_corpus(corpus)
    spec = STRATEGIES.get(strategy)
    cfg = spec.make_config(preset, **config)
    qs = [as_question(q) for q in questions]
    if not qs:
        return []
    chat = make_chat_model(llm)
    if spec.batched:
        return _run_batched(spec, corpus, qs, chat, cfg, cache_dir, show_progress)
    if spec.uses_index:
        index_for(corpus, cfg, cache_dir=cache_dir, show_progress=show_progress)
    from concurrent.futures import ThreadPoolExecutor

    def one(q: Question) -> Answer:
        return answer(corpus, q, strategy=strategy, llm=chat, preset=preset, cache_dir=cache_dir, **config)

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return list(pool.map(one, qs))


def _run_batched(spec, corpus, questions, chat, cfg, cache_dir, show_progress) -> list[Answer]:
    from agents.streaming import run_batched

    try:
        return run_batched(spec, corpus, questions, chat, cfg, cache_dir=cache_dir, show_progress=show_progress)
    except Exception as exc:
        explained = _explain(exc, chat)
        if explained is exc:
            raise
        raise explained from exc


def _check_corpus(corpus: Any) -> None:
    if not isinstance(corpus, Corpus):
        raise TypeError(f"corpus must be a retrieval.Corpus (see Corpus.from_path / from_texts), got {type(corpus).__name__}")


def index_for(corpus: Corpus, cfg: Any, *, cache_dir: str | Path | None = None, show_progress: bool = False) -> Index:
    """The (cached) index a retrieval-using strategy config asks for."""
    return cfg.build_index(corpus, cache_dir=cache_dir, show_progress=show_progress)


def trace_tags(strategy: str, question: Question) -> list[str]:
    """LangSmith tags of one answer: the strategy, and the benchmark and sample when known."""
    tags = [f"strategy:{strategy}"]
    for key, prefix in (("benchmark", "benchmark"), ("sample_id", "sample")):
        if question.metadata.get(key) is not None:
            tags.append(f"{prefix}:{question.metadata[key]}")
    return tags


def _evidence(hit) -> Evidence:
    c = hit.chunk
    return Evidence(doc_id=c.doc_id, title=c.title, text=c.text, score=hit.score, chunk_id=c.chunk_id, rank=hit.rank)


def _explain(exc: Exception, llm: BaseChatModel) -> Exception:
    """Turn a provider failure into a :class:`ChatModelError` naming the server (see ``as_chat_model_error``)."""
    return as_chat_model_error(exc, llm)
