"""The message lists HippoRAG 2 sends, filled as the official code fills its templates
(``PromptTemplateManager.render``, ``OpenIE.ner`` / ``triple_extraction``, ``DSPyFilter.llm_call``,
``HippoRAG.qa``; official code @ c617143), as ``{"role", "content"}`` dicts and as LangChain
messages."""

from __future__ import annotations

import json
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from longctx.graphs.hipporag import prompts as P

Messages = list[dict[str, str]]


def ner_messages(passage: str) -> Messages:
    """NER of one passage: system turn, the one-shot pair, the passage."""
    return [
        {"role": "system", "content": P.NER_SYSTEM},
        {"role": "user", "content": P.NER_EXAMPLE_PASSAGE},
        {"role": "assistant", "content": P.NER_EXAMPLE_OUTPUT},
        {"role": "user", "content": passage},
    ]


def entities_json(entities: Sequence[object]) -> str:
    """``json.dumps({"named_entities": entities})`` with the standard library's defaults (non-ASCII
    escaped), as the official call."""
    return json.dumps({"named_entities": list(entities)})


def triple_messages(passage: str, entities: Sequence[object]) -> Messages:
    """Triple extraction of one passage given its named entities: system turn, the one-shot pair,
    the frame filled."""
    example = P.TRIPLE_FRAME.format(
        passage=P.NER_EXAMPLE_PASSAGE, named_entity_json=P.NER_EXAMPLE_OUTPUT
    )
    return [
        {"role": "system", "content": P.TRIPLE_SYSTEM},
        {"role": "user", "content": example},
        {"role": "assistant", "content": P.TRIPLE_EXAMPLE_OUTPUT},
        {
            "role": "user",
            "content": P.TRIPLE_FRAME.format(
                passage=passage, named_entity_json=entities_json(entities)
            ),
        },
    ]


def facts_json(facts: Sequence[Sequence[str]]) -> str:
    """The candidate facts as the filter receives them: ``json.dumps({"fact": [[s, p, o],
    ...]})``."""
    return json.dumps({"fact": [list(f) for f in facts]})


def filter_messages(question: str, facts: Sequence[Sequence[str]]) -> Messages:
    """The recognition-memory filter: system turn, each demo as a user/assistant pair, then the
    question's candidates."""
    out: Messages = [{"role": "system", "content": P.FILTER_SYSTEM}]
    for q, before, after in P.FILTER_DEMOS:
        out.append(
            {
                "role": "user",
                "content": P.FILTER_INPUT_TEMPLATE.format(question=q, fact_before_filter=before),
            }
        )
        out.append(
            {
                "role": "assistant",
                "content": P.FILTER_OUTPUT_TEMPLATE.format(fact_after_filter=after),
            }
        )
    out.append(
        {
            "role": "user",
            "content": P.FILTER_INPUT_TEMPLATE.format(
                question=question, fact_before_filter=facts_json(facts)
            ),
        }
    )
    return out


def qa_user_turn(passages: Sequence[str], question: str) -> str:
    """``HippoRAG.qa``'s last user turn: each passage after ``Wikipedia Title: `` and a blank line,
    then the question and ``Thought: ``."""
    return (
        "".join(f"Wikipedia Title: {p}\n\n" for p in passages)
        + "Question: "
        + question
        + "\nThought: "
    )


def qa_turns(user_turn: str) -> Messages:
    """The official QA request (``rag_qa_musique``) around its last user turn: system turn, the
    one-shot pair, ``user_turn``."""
    return [
        {"role": "system", "content": P.QA_SYSTEM},
        {"role": "user", "content": P.QA_EXAMPLE_INPUT},
        {"role": "assistant", "content": P.QA_EXAMPLE_OUTPUT},
        {"role": "user", "content": user_turn},
    ]


def qa_messages(passages: Sequence[str], question: str) -> Messages:
    """The official QA request over ``passages`` for ``question``."""
    return qa_turns(qa_user_turn(passages, question))


def as_langchain(messages: Messages) -> list[BaseMessage]:
    """The same turns as LangChain messages."""
    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    return [kinds[m["role"]](content=m["content"]) for m in messages]


def qa_answer(reply: str) -> str:
    """The answer of an official QA reply: what follows the first ``Answer:``, stripped; the whole
    reply without one."""
    parts = reply.split("Answer:")
    return parts[1].strip() if len(parts) > 1 else reply
