"""What an answer read, from the answer contract alone: the documents it saw and the searches it
made, for any strategy, from an :class:`~longctx.retrieval.contract.Answer` or its result row.

Documents read, the union of:

- its evidence (``Answer.evidence`` / the row's ``evidence_doc_ids``): the documents of the chunks
  RAG, Self-Ask, Self-Route's RAG leg, RAPTOR and HippoRAG put in their prompts;
- every step's ``doc_ids`` (also spelt ``docids`` / ``retrieved_docids``): the convention for a
  strategy that reads documents outside its evidence (a search agent's retrieved ids, the
  documents a recursive sub-call saw);
- not the evidence where a step says ``evidence_read: false``: a strategy whose evidence is what
  its answer cites, not what it read (the search agent cites documents; what it read is the
  ``doc_ids`` of its searches, as BrowseComp-Plus's client records ``retrieved_docids``);
- the whole corpus where a step says the strategy read all of it: a batched stream that ran to
  its end (MemAgent's ``final_answer`` step, not stopped by a budget) or a full-context prompt that
  was not truncated (``build_prompt`` with ``truncated: false``). A truncated prompt or a stream
  stopped early counts its evidence only (a lower bound; ``longctx ceilings`` gives the rule's
  reach).

Searches: one per tool call (a ``tools`` step, by its ``tool``) and one ``search`` per retrieval
node (``retrieve``, ``retrieve_follow_up``): a query to the index is a search.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

VERSION = 1

#: Step keys that list documents a step read.
DOC_ID_KEYS = ("doc_ids", "docids", "retrieved_docids")
#: Step nodes that query the index once each.
RETRIEVAL_NODES = frozenset({"retrieve", "retrieve_follow_up"})
#: The name a retrieval node's query is counted under (the search agent's tool name).
SEARCH = "search"


@dataclass(frozen=True)
class Reading:
    """The documents an answer read and the searches it made.

    Attributes:
        doc_ids: Documents read (sorted), not counting ``whole_corpus``.
        whole_corpus: It read every document of its corpus.
        tool_calls: Calls per tool (retrievals under ``search``), in first-seen order.
        completed: It finished (not failed, not stopped by a budget).
    """

    doc_ids: tuple[str, ...] = ()
    whole_corpus: bool = False
    tool_calls: Mapping[str, int] = field(default_factory=dict)
    completed: bool = True

    def documents(self, corpus_ids: Iterable[str] = ()) -> set[str]:
        """The documents read, with ``corpus_ids`` (the answer's corpus) when it read them all."""
        return set(self.doc_ids) | (set(corpus_ids) if self.whole_corpus else set())


def _get(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def _evidence_ids(item: Any) -> set[str]:
    if isinstance(item, Mapping) and isinstance(item.get("evidence_doc_ids"), list):
        return {str(d) for d in item["evidence_doc_ids"]}
    return {str(_get(e, "doc_id")) for e in _get(item, "evidence") or [] if _get(e, "doc_id")}


def _reads_whole(step: Mapping[str, Any], stopped: Any) -> bool:
    node = step.get("node")
    if node == "final_answer" and "chunks" in step:  # a batched stream (MemAgent) over every chunk
        return stopped is None
    return node == "build_prompt" and "context_window" in step and step.get("truncated") is False


def reading_of(item: Any) -> Reading:
    """The :class:`Reading` of an :class:`~longctx.retrieval.contract.Answer` or a result row
    (``results.jsonl``; a failed row read nothing and did not complete)."""
    if isinstance(item, Mapping) and item.get("status", "ok") != "ok":
        return Reading(completed=False)
    stopped = _get(item, "stopped")
    steps = [s for s in _get(item, "steps") or [] if isinstance(s, Mapping)]
    cites_only = any(s.get("evidence_read") is False for s in steps)
    ids: set[str] = set() if cites_only else _evidence_ids(item)
    whole = False
    calls: dict[str, int] = {}
    for step in steps:
        for key in DOC_ID_KEYS:
            if isinstance(step.get(key), list):
                ids |= {str(d) for d in step[key]}
        whole = whole or _reads_whole(step, stopped)
        node = step.get("node")
        if node == "tools" and step.get("tool"):
            calls[str(step["tool"])] = calls.get(str(step["tool"]), 0) + 1
        elif node in RETRIEVAL_NODES:
            calls[SEARCH] = calls.get(SEARCH, 0) + 1
    return Reading(tuple(sorted(ids)), whole, calls, completed=stopped is None)
