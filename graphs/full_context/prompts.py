"""The full-context prompt, in LongBench v2's ``0shot.txt`` frame: instructions, the text in
``<text>`` tags, then the question and the output-format instruction last, so the
instructions survive middle truncation at both ends. Bump ``PROMPTS_VERSION`` on any edit."""

from __future__ import annotations

PROMPTS_VERSION = 1

FULL_CONTEXT_TEMPLATE = """Please read the following text and answer the question below.

<text>
{context}
</text>

Question: {question}

{instruction}"""
