"""MemAgent's prompt templates, verbatim from BytedTsinghua-SIA/MemAgent
``taskutils/memory_eval/utils/recurrent.py``. Bump ``PROMPTS_VERSION`` on any edit."""

from __future__ import annotations

PROMPTS_VERSION = 1


#: Verbatim (note the space after ``<problem>`` and the trailing newline).
MEMORY_TEMPLATE = """You are presented with a problem, a section of an article that may contain the answer to the problem, and a previous memory. Please read the provided section carefully and update the memory with the new information that helps to answer the problem. Be sure to retain all relevant details from the previous memory while adding any new, useful information.

<problem> 
{prompt}
</problem>

<memory>
{memory}
</memory>

<section>
{chunk}
</section>

Updated memory:
"""


#: Verbatim with ``{instruction}`` = DEFAULT_FINAL_INSTRUCTION; a benchmark's instruction replaces it.
FINAL_TEMPLATE = """You are presented with a problem and a previous memory. Please answer the problem based on the previous memory{instruction}

<problem> 
{prompt}
</problem>

<memory>
{memory}
</memory>

Your answer:
"""


DEFAULT_FINAL_INSTRUCTION = """ and format your response as follows "Therefore, the answer is (insert answer here)"."""


def final_instruction(instruction: str | None) -> str:
    """The clause ending the final prompt's first paragraph."""
    return DEFAULT_FINAL_INSTRUCTION if not instruction else ". " + instruction
