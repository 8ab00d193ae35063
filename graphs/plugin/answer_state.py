"""What a single-question strategy's final state holds for the run path: the answer contract of its
graph.

Every strategy's state ``TypedDict`` extends :class:`AnswerState`
(``class RagState(AnswerState, total=False)``) and adds what evolves in its own graph;
:func:`longctx.graphs.runtime.run_single.single_answer` reads a final state through this type alone,
so a key renamed in one strategy is a type error there, not an answer that is quietly empty.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

from longctx.retrieval import Hit
from longctx.retrieval.contract import Evidence, Question, Step

#: Why a run stopped before its answer: its budget (the guard refused the next call).
Stopped = Literal["budget"]


class AnswerState(TypedDict, total=False):
    """The keys the run path reads of a final state (each optional: a node writes only what it
    found).

    Attributes:
        question: The question asked (the graph's input, with ``steps``).
        answer: The answer a user reads (``""`` when there is none).
        raw: The text a benchmark scores (the model's reply, or what the strategy extracts of it).
        hits: Retrieved chunks the answer was based on (overwritten by each write: a strategy that
            gathers hits over several nodes writes the list so far), shown as evidence.
        evidence: Evidence that is not a retrieved chunk (RAPTOR's tree nodes, structured's rows).
        steps: One record per node that ran, in order (a reducer: every node appends its own).
        stopped: Why the run stopped early (``"budget"``), absent when it ran to its answer.
    """

    question: Question
    answer: str
    raw: str
    hits: list[Hit]
    evidence: list[Evidence]
    steps: Annotated[list[Step], operator.add]
    stopped: Stopped


class BatchAnswer(TypedDict):
    """Question ``i``'s answer fields in a batched run's final state
    (:attr:`longctx.graphs.plugin.registry.BatchRun.collect`).

    Attributes:
        answer: The answer a user reads.
        raw: The text a benchmark scores.
        usage: The question's usage as its state records it
            (:meth:`longctx.retrieval.contract.Usage.from_dict`).
        final_step: Facts the strategy adds to the answer's last step.
    """

    answer: str
    raw: str
    usage: dict[str, Any]
    final_step: dict[str, Any]


class PromptState(AnswerState, total=False):
    """What the shared final call (:func:`longctx.graphs.plugin.nodes.generate`) reads besides the
    question: the filled prompt.

    Attributes:
        prompt: The prompt to send.
        official_prompt: The prompt is the benchmark's own (its protocol's system turn and answer
            prompt apply).
    """

    prompt: str
    official_prompt: bool
