"""The text MemAgent reads, and the token windows it is cut into: one memory update per window.

The layout (plain, as the official loop streams one context, or titled documents) and the cut
(at character boundaries, or exactly at token ids as the official loop) follow the config; the
run (:func:`longctx.graphs.memagent.graph.prepare_context`) and the cost plan cut the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.language_models import BaseChatModel

from longctx.graphs.memagent.config import MemAgentConfig
from longctx.graphs.plugin.api import (
    Tokenizer,
    format_documents,
    slice_ids,
    split_ids,
    tiktoken_tokenizer,
    tokenizer_for,
)
from longctx.retrieval.contract import Corpus, Question


def split_stream(
    text: str, size: int, encode: Callable[[str], list[int]], decode: Callable[[list[int]], str]
) -> list[tuple[str, int]]:
    """The token stream of ``text`` in windows of ``size`` tokens, as ``(text, n_tokens)``
    (cut at character boundaries; see :func:`longctx.retrieval.tokenizers.split_ids`)."""
    return split_ids(text, size, Tokenizer(id="given", encode_fn=encode, decode_fn=decode))


def cut_windows(text: str, cfg: MemAgentConfig, tokenizer: Tokenizer) -> list[tuple[str, int]]:
    """The windows MemAgent reads of ``text``, ``(text, n_tokens)``, cut as ``cfg.window_cut`` says:
    at character boundaries (:func:`split_ids`) or exactly as the official loop
    (:func:`slice_ids`)."""
    cut = slice_ids if cfg.window_cut == "token" else split_ids
    return cut(text, cfg.chunk_tokens, tokenizer)


def stream_text(
    corpus: Corpus, questions: Sequence[Question], stream: str, start: int = 0
) -> tuple[str, str]:
    """The text MemAgent reads, and which layout made it.

    ``"plain"``: the documents' texts stripped, joined by blank lines; for one document
    exactly the official loop's ``item["context"].strip()`` (``taskutils/memory_eval/utils/
    recurrent.py``). ``"titled"``: ``Document i: <title>`` headers before each text. ``"auto"``:
    plain for a benchmark item (every question carries a benchmark protocol and the corpus is
    the item's one context), titled otherwise (own corpora, and multi-document benchmark items,
    which MemAgent's evaluation never streams and whose titles name what the questions ask about).
    ``start``: only the documents from there on (numbered as in the whole corpus), what a run
    continued over a grown corpus reads.
    """
    if stream == "auto":
        benchmark_item = (
            bool(questions) and all(q.protocol is not None for q in questions) and len(corpus) == 1
        )
        stream = "plain" if benchmark_item else "titled"
    if stream == "plain":
        return "\n\n".join(d.text.strip() for d in corpus.documents[start:]), "plain"
    if stream == "titled":
        return format_documents(corpus.documents[start:], first=start + 1), "titled"
    raise ValueError(f"stream must be 'auto', 'plain' or 'titled', got {stream!r}")


def memagent_chunks(
    cfg: MemAgentConfig,
    corpus: Corpus,
    questions: Sequence[Question],
    llm: BaseChatModel | None = None,
) -> tuple[int, ...]:
    """Token sizes of the chunks MemAgent reads (cut as
    :func:`longctx.graphs.memagent.graph.prepare_context` cuts them)."""
    text, _ = stream_text(corpus, questions, cfg.stream)
    tokenizer = tokenizer_for(llm) if llm is not None else tiktoken_tokenizer("cl100k_base")
    return tuple(n for _, n in cut_windows(text, cfg, tokenizer))
