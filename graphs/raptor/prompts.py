"""RAPTOR's requests, verbatim from the official code (parthsarthi03/raptor @ 2e3e83e); bump
``PROMPTS_VERSION`` on any edit."""

from __future__ import annotations

PROMPTS_VERSION = 1

#: SummarizationModels.GPT3TurboSummarizationModel: the system turn.
SUMMARY_SYSTEM = "You are a helpful assistant."
#: Its user turn (the trailing colon is the official text's).
SUMMARY_TEMPLATE = (
    "Write a summary of the following, including as many key details as possible: {context}:"
)
#: QAModels.GPT3TurboQAModel: the system turn (``qa_prompt="paper"``).
QA_SYSTEM = "You are Question Answering Portal"
#: Its user turn.
QA_TEMPLATE = (
    "Given Context: {context} Give the best full answer amongst the option to question {question}"
)


def node_context(texts: list[str]) -> str:
    """``utils.get_text``: each node's text on one line (its lines joined by spaces), then a blank line."""
    return "".join(" ".join(t.splitlines()) + "\n\n" for t in texts)
