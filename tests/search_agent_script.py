"""A scripted search agent for the recording stub (:mod:`tests.recording_server`): stateless, so
questions answered at once, in threads or in Ray workers, each get their own conversation.

Its first turn searches the question (the user turn's ``Question:`` line); once a tool result is
in the conversation it answers from the first document returned, citing it: the snippet's first
words as the "Exact Answer:". :data:`DOCS` and :data:`QUESTIONS` are a small corpus where each
question's words find one document."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from tests.recording_server import tool_call, tool_reply

DOCS = {
    "halvorsen.txt": "Halvorsen Maritime is headquartered in Bergen and operates 42 vessels.",
    "kestrel.txt": "Kestrel Aviation is headquartered in Tampere and flies to 30 cities.",
    "sorrento.txt": "Sorrento Foods is headquartered in Naples and sells tomato sauce.",
}
QUESTIONS = {
    "hq": "Where is Halvorsen Maritime headquartered?",
    "fleet": "How many cities does Kestrel Aviation fly to?",
    "sauce": "What does Sorrento Foods sell?",
}


def question_of(request: dict[str, Any]) -> str:
    """The question of a search-agent conversation (its first user turn's ``Question:`` line)."""
    found = re.search(r"Question: (.*)", str(request["messages"][0]["content"]))
    return found.group(1).strip() if found else ""


def searching_agent(request: dict[str, Any]) -> Any:
    """The stub's reply: a ``search`` of the question, then an answer citing the first hit."""
    question = question_of(request)
    results = [m for m in request["messages"] if m["role"] == "tool"]
    if not results:
        call_id = "call_" + hashlib.sha1(question.encode()).hexdigest()[:10]
        return tool_reply(tool_call("search", {"query": question}, call_id))
    hits = json.loads(results[-1]["content"])
    if not hits:
        return "Explanation: nothing found.\nExact Answer: unknown\nConfidence: 0%"
    words = " ".join(hits[0]["snippet"].split()[:3])
    return f"Explanation: it says so [{hits[0]['docid']}].\nExact Answer: {words}\nConfidence: 60%"


def write_data(root: Any) -> tuple[Any, Any]:
    """:data:`DOCS` as a folder of text files and :data:`QUESTIONS` as a questions file."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    questions = root / "questions.jsonl"
    questions.write_text(
        "".join(json.dumps({"id": k, "question": q}) + "\n" for k, q in QUESTIONS.items())
    )
    return docs, questions
