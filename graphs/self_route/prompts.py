"""Self-Route's one extra instruction (Li et al. 2024, verbatim). Bump ``PROMPTS_VERSION`` on any edit."""

from __future__ import annotations

PROMPTS_VERSION = 1


#: Li et al. 2024 (verbatim), appended after the answer-format instruction.
UNANSWERABLE_INSTRUCTION = """Write unanswerable if the query can not be answered based on the provided text."""
