"""Prompt pieces several strategies share: how chunks and documents are laid out, and
the default output-format instruction. Bump ``PROMPTS_VERSION`` on any edit."""

from __future__ import annotations

from collections.abc import Sequence

from longctx.retrieval import Chunk, Document
from longctx.retrieval.contract import Question

PROMPTS_VERSION = 1

#: Used when the benchmark gives no output-format instruction (LongBench v1 QA wording).
DEFAULT_INSTRUCTION = """Only give me the answer and do not output any other words."""

CHUNK_TEMPLATE = """Retrieved chunk {number} (from "{title}"):
{text}"""

DOCUMENT_TEMPLATE = """Document {number}: {title}
{text}"""

#: Appended to the prompt of a call retried after a malformed reply
#: (:mod:`longctx.graphs.calls.validated_call`; written for PAI's structured calls, and shared since
#: with the structured strategy's).
RETRY_NOTE = """

Your previous reply could not be used ({error}). Reply again, following the required format exactly."""


def format_chunks(chunks: Sequence[Chunk]) -> str:
    """Chunks numbered from 1, in the order given, separated by blank lines."""
    return "\n\n".join(
        CHUNK_TEMPLATE.format(number=i, title=c.title, text=c.text.strip())
        for i, c in enumerate(chunks, 1)
    )


def format_documents(documents: Sequence[Document], first: int = 1) -> str:
    """Whole documents numbered from ``first`` (1) with their titles, separated by blank lines."""
    return "\n\n".join(
        DOCUMENT_TEMPLATE.format(number=i, title=d.title, text=d.text.strip())
        for i, d in enumerate(documents, first)
    )


def fill(template: str, context: str, question: Question) -> str:
    """Fill a strategy template with context, the rendered question and its instruction."""
    return template.format(
        context=context,
        question=question.render(),
        instruction=question.instruction or DEFAULT_INSTRUCTION,
    )
