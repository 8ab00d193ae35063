"""RAG's prompt, in LongBench v2's ``0shot_rag.txt`` frame: instructions, the retrieved text
in ``<text>`` tags, then the question and the output-format instruction last. Self-Route
and Self-Ask's reader use it too. Bump ``PROMPTS_VERSION`` on any edit."""

from __future__ import annotations

PROMPTS_VERSION = 1

RAG_TEMPLATE = """Please read the following retrieved text chunks and answer the question below.

<text>
{context}
</text>

Question: {question}

{instruction}"""
