"""MemAgent's settings (BytedTsinghua-SIA/MemAgent's evaluation defaults)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from longctx.graphs.plugin.api import StrategyConfig, option


@dataclass(frozen=True, kw_only=True)
class MemAgentConfig(StrategyConfig):
    """MemAgent's paper defaults.

    Attributes:
        chunk_tokens: Tokens of corpus per step, in the model's tokenizer (as the official
            loop): its own, a local HF one, the server's tokenize endpoint, tiktoken's for
            OpenAI models, cl100k last (see ``longctx.graphs.calls.llm.tokenizer_for``; recorded as
            ``config["tokenizer"]``).
        max_new_tokens: Budget of every generated memory and of the final answer.
        temperature / top_p: The official evaluation's sampling.
        concurrency: Calls in flight at once (questions advanced together per chunk).
        resume: Checkpoint every step on disk and resume an interrupted run.
        trace_chars: Characters of each memory snapshot kept in ``Answer.steps`` (None = all).
        final_instruction: ``"benchmark"``: the final call ends with the benchmark's output
            format and answer budget when the question gives them (what its scorer reads);
            ``"memagent"`` (preset ``paper``): always MemAgent's own "Therefore, the answer is", and
            the scored text is what MemAgent's ``extract_answer`` keeps of the reply.
        stream: What is read: ``"auto"`` streams a benchmark item's context as the official loop
            does (``context.strip()``, no header) and own corpora with ``Document i: <title>``
            headers; ``"plain"`` / ``"titled"`` force one layout (see
            ``longctx.graphs.memagent.stream.stream_text``).
        window_cut: How the stream is cut into windows. ``"character"`` (default): each cut at
            ``chunk_tokens`` is moved back to the start of a character whose tokens it would split
            (both windows stay readable; every later window then starts earlier than the official
            loop's, by all the tokens moved so far); ``"token"`` (preset ``paper``): exactly
            ``chunk_tokens`` ids a window, each decoded as it is, as the official loop (a split
            character arrives as U+FFFD in both windows; see
            :func:`longctx.retrieval.tokenizers.slice_ids`).
        continue_from_prefix: For a corpus that grew (``Corpus.add`` / ``Corpus.rescan``): start
            from the final memories of the finished run (same questions, config and model) over the
            longest earlier corpus this one extends, and read only the documents added since (a
            standing question kept up to date). Off by default: the answer then differs from a run
            over the whole corpus, whose windows are cut differently.
    """

    chunk_tokens: int = option(5000, min=1, source="MemAgent RECURRENT_CHUNK_SIZE=5000")
    max_new_tokens: int = option(1024, min=1, source="MemAgent RECURRENT_MAX_NEW=1024")
    temperature: float = option(0.7, min=0.0, source="MemAgent memory_eval: temperature=0.7")
    top_p: float = option(0.95, min=0.0, max=1.0, source="MemAgent memory_eval: top_p=0.95")
    concurrency: int = option(8, min=1, source="official --n_proc 64; 8 suits one local server")
    resume: bool = True
    trace_chars: int | None = option(2000, min=0)
    final_instruction: Literal["benchmark", "memagent"] = option(
        "benchmark", source="the benchmark's output format; 'memagent' = the paper's own"
    )
    stream: Literal["auto", "plain", "titled"] = option(
        "auto", source="MemAgent recurrent.py: tokenizer.encode(item['context'].strip())"
    )
    window_cut: Literal["character", "token"] = option(
        "character", source="MemAgent recurrent.py: tokenizer.decode(input_ids[i:i+5000]) ('token')"
    )
    continue_from_prefix: bool = False
