"""MemoryAgentBench's requests: its 4,096-token chunks, the memorize and query templates, both
agents' messages.

The official runner (HUST-AI-HYZ/MemoryAgentBench @ 455306d, ``conversation_creator.py``,
``agent.py``) cuts a context into sentence-aligned chunks of at most ``chunk_size`` tokens,
wraps each in the dataset's ``memorize`` template and then asks each question with the
dataset's ``query`` template: the long-context agent sends the memorized chunks joined by
newlines (its last ``context_max_length`` tokens) + ``"\\n"`` + the query; the BM25 RAG agent
sends the top-10 memorized chunks as ``Memory i:`` blocks + ``"\\n"`` + its query. Both send
:data:`SYSTEM` as a system turn (a deviation here: our strategies send one user turn).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from longctx.experiments.metrics.memoryagentbench_judge import official_prompts
from longctx.retrieval.tokens import count_tokens, decode, encode

#: ``chunk_size`` of every data config.
CHUNK_SIZE = 4096
#: The official memorize templates stamp each chunk with the wall-clock time when it is
#: memorized (``time.strftime("%Y-%m-%d %H:%M:%S")``); a fixed stamp keeps our requests
#: reproducible and cacheable.
TIME_STAMP = "2025-01-01 00:00:00"
#: ``get_template``'s ``DATASET_MAPPING``: every pattern in the sub-dataset name -> template family.
FAMILIES = (
    (("ruler_", "qa"), "ruler_qa"),
    (("icl_",), "in_context_learning"),
    (("infbench_", "sum"), "infbench_sum"),
    (("eventqa_",), "eventqa"),
    (("recsys_", "redial"), "recsys_redial"),
    (("longmemeval_",), "longmemeval"),
    (("factconsolidation_",), "factconsolidation"),
    (("detective_", "qa"), "detective_qa"),
)
#: Sentence ends: NLTK's punkt model (the official splitter) is not available offline; this splits
#: after ``.``, ``!`` or ``?`` (optionally closed by a quote or bracket) followed by white space.
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+")


def family(source: str) -> str:
    """``normalize_dataset_name``: the template family of a sub-dataset."""
    for patterns, name in FAMILIES:
        if all(p in source for p in patterns):
            return name
    raise KeyError(f"MemoryAgentBench: no template family for sub-dataset {source!r}")


def system_message() -> str:
    """The system turn of every official request."""
    return str(official_prompts()["system"])


def template(source: str, kind: str) -> str:
    """The official ``memorize``, ``long_context_agent`` or ``rag_agent`` template of a
    sub-dataset."""
    return str(official_prompts()["templates"][family(source)][kind])


def sentences(text: str) -> list[str]:
    """The text's sentences (stripped, empty ones dropped), the stand-in for
    ``nltk.sent_tokenize``."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def chunk_context(text: str, chunk_size: int = CHUNK_SIZE) -> list[str]:
    """``chunk_text_into_sentences``: sentences packed greedily into chunks of at most
    ``chunk_size`` tokens, joined by spaces.

    As official, a sentence longer than a chunk makes a chunk of its own, and one at the very
    start leaves an empty first chunk.
    """
    chunks: list[str] = []
    current: list[str] = []
    tokens = 0
    for sentence in sentences(text):
        n = count_tokens(sentence)
        if tokens + n > chunk_size:
            chunks.append(" ".join(current))
            current, tokens = [sentence], n
        else:
            current.append(sentence)
            tokens += n
    if current:
        chunks.append(" ".join(current))
    return chunks


def memorize(source: str, chunk: str, time_stamp: str = TIME_STAMP) -> str:
    """One chunk in the sub-dataset's ``memorize`` template."""
    form = template(source, "memorize")
    return form.format(
        context=chunk, **({"time_stamp": time_stamp} if "{time_stamp}" in form else {})
    )


def query(source: str, question: str, agent: str = "long_context_agent") -> str:
    """The question in the sub-dataset's query template of ``agent`` (``long_context_agent`` or
    ``rag_agent``)."""
    return template(source, agent).format(question=question)


def memorized_context(
    source: str, context: str, max_tokens: int | None, chunk_size: int = CHUNK_SIZE
) -> str:
    """The long-context agent's memory: memorized chunks joined by newlines, cut to its last
    ``max_tokens`` tokens."""
    text = "\n".join(memorize(source, c) for c in chunk_context(context, chunk_size)).strip()
    if max_tokens is not None:
        ids = encode(text)
        if len(ids) > max_tokens:
            text = decode(ids[-max_tokens:])
    return text


def long_context_message(memory: str, query_text: str) -> str:
    """The long-context agent's user turn: ``context + "\\n" + message``."""
    return memory + "\n" + query_text


def rag_message(source: str, chunks: Sequence[str], question: str) -> str:
    """The BM25 RAG agent's user turn: each retrieved chunk memorized, as ``Memory i:`` blocks,
    then its query.

    A chunk's sentences are joined by single spaces first, as the official chunker joins them
    (a chunk it made already is unchanged by this).
    """
    blocks = "\n".join(
        f"Memory {i + 1}:\n{memorize(source, ' '.join(sentences(c)))}\n"
        for i, c in enumerate(chunks)
    )
    return blocks + "\n" + query(source, question, "rag_agent")
