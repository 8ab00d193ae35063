"""PAI's function schemas and prompts (seed 002, App. A.2, Fig. 4 and Fig. 8), verbatim constants.

The two function schemas are the paper's (Fig. 4) character for character; only the
``{metric_example}`` / ``{subject_example}`` slots are filled with a domain's examples.
The paper gives no user-message text for any call, nor the sub-answer and summary
prompts: those below are ours (see ``docs/pai.md``). Bump ``PROMPTS_VERSION`` on any edit.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

PROMPTS_VERSION = 2  # 2: the chunk-first judge prompts (judge_order='chunk_first'); the others unchanged

#: Domain examples filled into the property schema (seed 002, App. A.2); "general" is ours.
DOMAIN_EXAMPLES: Mapping[str, Mapping[str, str]] = {
    "finance": {"metric_example": '"profit", "revenue", and "debt"', "subject_example": '"financial document title"'},
    "legal": {"metric_example": '"verdict"', "subject_example": '"legal judgment"'},
    "academic": {"metric_example": '"reference" and "citation"', "subject_example": '"paper title"'},
    "general": {"metric_example": '"date", "amount", "count", and "name"', "subject_example": '"document title"'},
}

#: Loong's domain labels -> ours, for ``domain="auto"`` (read from ``Question.metadata["domain"]``).
DOMAIN_ALIASES: Mapping[str, str] = {"financial": "finance", "finance": "finance", "legal": "legal", "paper": "academic", "papers": "academic", "academic": "academic"}

#: Fig. 4 (top), verbatim; ``{metric_example}`` and ``{subject_example}`` are filled per domain.
PROPERTY_FUNCTION: Mapping[str, Any] = {
    "type": "function",
    "function": {
        "name": "Query",
        "strict": True,
        "parameters": {
            "properties": {
                "metric": {
                    "description": "Specifies the metric for each of the given queries. The metric refers to a measurable factor being analyzed. Examples include {metric_example}. Use precise and unambiguous terms that clearly represent the desired data point.",
                    "title": "Metric",
                    "type": "string",
                },
                "subject": {
                    "description": "Indicates the subject towards the metric, such as {subject_example}. Ensure the subject is clearly defined for context.",
                    "title": "Subject",
                    "type": "string",
                },
            },
            "required": ["metric", "subject"],
            "title": "Query_Parameters",
            "type": "object",
            "additionalProperties": False,
        },
    },
}

#: Fig. 4 (bottom), verbatim.
KEEP_CONTEXT_FUNCTION: Mapping[str, Any] = {
    "type": "function",
    "function": {
        "name": "Query",
        "strict": True,
        "parameters": {
            "properties": {
                "keep_context": {
                    "description": "Does the provided context contain information needed to answer the query? Answer 'true' or 'false'",
                    "title": "Keep Context",
                    "type": "boolean",
                }
            },
            "required": ["keep_context"],
            "title": "Query",
            "type": "object",
            "additionalProperties": False,
        },
    },
}

#: PAI- (ours): the same "Query" function returning a free-form sub-question instead of a property.
SUB_QUESTION_FUNCTION: Mapping[str, Any] = {
    "type": "function",
    "function": {
        "name": "Query",
        "strict": True,
        "parameters": {
            "properties": {
                "sub_question": {
                    "description": "A self-contained sub-question whose answer is needed to answer the given query. Ask for one fact about one clearly named subject.",
                    "title": "Sub Question",
                    "type": "string",
                }
            },
            "required": ["sub_question"],
            "title": "Query_Parameters",
            "type": "object",
            "additionalProperties": False,
        },
    },
}

#: Seed 002, App. A.2: "What was the <metric> of the <subject>?".
SUB_QUESTION_TEMPLATE = """What was the {metric} of the {subject}?"""

PROPERTY_PROMPT = """Identify the key properties needed to answer the query below. A property is a metric (a measurable factor being analyzed) together with the subject it applies to. When the query compares, ranks or tracks a metric across several subjects (documents, companies, years, cases, papers), give one property per subject.

Query: {question}

{how}"""

SUB_QUESTION_PROMPT = """Break the query below into the sub-questions that must be answered from the documents to answer it. When the query compares, ranks or tracks something across several subjects (documents, companies, years, cases, papers), ask one sub-question per subject.

Query: {question}

{how}"""

#: How several items are returned, per ``PaiConfig.property_calls``.
HOW_PARALLEL = """Call the function once for each {item}."""
HOW_LIST = """Call the function once, with the list of all {item}s."""
HOW_JSON = """Reply with one JSON object only, no other text, of the form {{"items": [{example}]}}. Field meanings:
{fields}"""

JUDGE_PROMPT = """Query: {sub_question}

Context (from "{title}"):
{chunk}

Decide whether the provided context contains information needed to answer the query, and call the function with your decision."""

JUDGE_JSON_PROMPT = """Query: {sub_question}

Context (from "{title}"):
{chunk}

Decide whether the provided context contains information needed to answer the query. Reply with one JSON object only, no other text: {{"keep_context": true}} or {{"keep_context": false}}. keep_context: Does the provided context contain information needed to answer the query? Answer 'true' or 'false'"""

#: The judge prompts with the chunk first (``PaiConfig.judge_order="chunk_first"``): the same words, ordered so
#: that every judge call of one chunk starts alike and a prompt cache serves it to the other sub-questions.
JUDGE_CHUNK_FIRST_PROMPT = """Context (from "{title}"):
{chunk}

Query: {sub_question}

Decide whether the provided context contains information needed to answer the query, and call the function with your decision."""

JUDGE_CHUNK_FIRST_JSON_PROMPT = """Context (from "{title}"):
{chunk}

Query: {sub_question}

Decide whether the provided context contains information needed to answer the query. Reply with one JSON object only, no other text: {{"keep_context": true}} or {{"keep_context": false}}. keep_context: Does the provided context contain information needed to answer the query? Answer 'true' or 'false'"""

SUB_ANSWER_PROMPT = """Answer the sub-question using only the context chunks below. They were judged relevant to it and are given in their original document order.

<context>
{context}
</context>

Sub-question: {sub_question}

{form}"""

#: Sub-answer form of a property (Fig. 8: "In <subject>, the <metric> is <value>.").
PROPERTY_ANSWER_FORM = """Reply with one sentence of the form "In {subject}, the {metric} is <value>." and nothing else. If the chunks do not give the value, reply "In {subject}, the {metric} is not found in the provided context." """

SUB_QUESTION_ANSWER_FORM = """Reply with one sentence that answers the sub-question and names its subject, and nothing else. If the chunks do not give the answer, reply "The answer to this sub-question is not found in the provided context." """

#: Written without a call when no chunk was kept for a sub-question.
NOT_FOUND_PROPERTY = """In {subject}, the {metric} is not found: no chunk of the documents was judged relevant to "{sub_question}"."""
NOT_FOUND_SUB_QUESTION = """The answer to "{sub_question}" is not found: no chunk of the documents was judged relevant to it."""

SUMMARY_PROMPT = """Answer the question below from the findings, which were extracted from the documents one by one. Use the findings only. A finding marked as not found means the documents gave no value for it: take that into account instead of guessing.

Question: {question}

Findings:
{findings}

{instruction}"""

#: Used when the benchmark gives no output-format instruction.
DEFAULT_SUMMARY_INSTRUCTION = """Give the answer to the question in one or a few sentences."""

#: The CoT output format of LongFinanceQA / LongPAI (seed 002, Fig. 8).
COT_TEMPLATE = """This question demands further reasoning: <reasoning> This question focuses on the key properties as follows:
{properties}
The analysis of the above properties is as follows:
{sub_answers}
The reasoning steps have been completed. </reasoning> Conclusion: {conclusion}"""

#: PAI- variant of the CoT header (no properties).
COT_TEMPLATE_MINUS = """This question demands further reasoning: <reasoning> This question is decomposed into the sub-questions as follows:
{properties}
The analysis of the above sub-questions is as follows:
{sub_answers}
The reasoning steps have been completed. </reasoning> Conclusion: {conclusion}"""


def fill_schema(function: Mapping[str, Any], domain: str) -> dict[str, Any]:
    """A deep copy of a function schema with the domain's examples in every description."""
    examples = DOMAIN_EXAMPLES[domain]
    schema = copy.deepcopy(dict(function))
    for prop in schema["function"]["parameters"]["properties"].values():
        text = prop["description"]
        for slot, value in examples.items():
            text = text.replace("{" + slot + "}", value)
        prop["description"] = text
    return schema


def list_schema(function: Mapping[str, Any], key: str = "items") -> dict[str, Any]:
    """The list-valued form of a one-item function: ``{key: [item, ...]}`` in one call."""
    item = copy.deepcopy(dict(function["function"]["parameters"]))
    item["title"] = item["title"] + "_Item"
    return {
        "type": "function",
        "function": {
            "name": function["function"]["name"],
            "strict": True,
            "parameters": {
                "properties": {key: {"type": "array", "title": key.title(), "items": item}},
                "required": [key],
                "title": "Query_List",
                "type": "object",
                "additionalProperties": False,
            },
        },
    }


def json_instruction(function: Mapping[str, Any]) -> str:
    """The JSON-mode format line for a function: example item plus each field's description."""
    props = function["function"]["parameters"]["properties"]
    example = "{" + ", ".join(f'"{name}": "..."' for name in props) + "}"
    fields = "\n".join(f"- {name}: {p['description']}" for name, p in props.items())
    return HOW_JSON.format(example=example, fields=fields)
