"""Runs the official HippoRAG 2 code (OSU-NLP-Group/HippoRAG @ c617143, ``src/hipporag``, unchanged)
against a recording stand-in for its chat model, and writes what it sends and what it reads back as
JSON: the oracle ``tests/test_hipporag_requests.py`` compares ours with
(``tests/fixtures/hipporag/official_requests.json``).

    python -m tests.hipporag_official PATH/TO/HippoRAG-checkout OUT.json
    # the graph and PPR rankings of GRAPH_PASSAGES:
    python -m tests.hipporag_official --graph PATH/TO/HippoRAG-checkout OUT.json

Recorded: the NER and triple-extraction messages of ``OpenIE.ner`` / ``triple_extraction`` for
:data:`PASSAGES` (the triple call given the entities the NER reply yields), the entities and
triples each official parser reads from :data:`NER_REPLIES` / :data:`TRIPLE_REPLIES`, the
recognition filter's messages and arguments (``DSPyFilter.llm_call``) and the facts
``DSPyFilter.rerank`` keeps for :data:`FILTER_REPLIES`, and ``HippoRAG.qa``'s messages and parsed
answers. Only what these never use is stood in for: the package's ``__init__`` files that import
every LLM and embedding backend (inert here).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

PASSAGES = [
    (
        "Radio City\nRadio City is India's first private FM radio station and was started on 3 "
        "July 2001."
    ),
    "Café Zürich\nThe café in Zürich costs $5 {per cup}; its owner, José, opened it in 1999.",
    "Untitled passage with no entities at all.",
]
#: (reply, finish_reason): read by the official NER parser.
NER_REPLIES = [
    ('{"named_entities": ["Radio City", "India", "3 July 2001", "Radio City"]}', "stop"),
    ('Here you go: {"named_entities": ["Café Zürich", "José", "$5"]} done', "stop"),
    ('{"named_entities": ["a", "b", ', "length"),
    ("no json at all", "stop"),
    ('{"named_entities": [null]}', "stop"),
]
#: (reply, finish_reason): read by the official triple parser.
TRIPLE_REPLIES = [
    (
        (
            '{"triples": [["Radio City", "located in", "India"], ["Radio City", "is"], ["Radio '
            'City", "located in", "India"], ["A", 2, "B"]]}'
        ),
        "stop",
    ),
    (
        (
            '{"triples": [["Café Zürich", "owned by", "José"], ["José", "opened", "Café Zürich"], '
            '["x", "y"'
        ),
        "length",
    ),
    ('{"triples": []}', "stop"),
    ("{'triples': [['single', 'quoted', 'reply']]}", "stop"),
]
QUESTION = "When was Radio City started?"
CANDIDATES = [
    ("radio city", "started on", "3 july 2001"),
    ("radio city", "located in", "india"),
    ("cafe zurich", "owned by", "jose"),
]
#: Filter replies: JSON, a Python literal, near-miss facts matched by difflib, none, unreadable.
FILTER_REPLIES = [
    (
        '[[ ## fact_after_filter ## ]]\n{"fact": [["radio city", "started on", "3 july 2001"]]}\n\n'
        "[[ ## completed ## ]]"
    ),
    (
        "[[ ## fact_after_filter ## ]]\n{'fact': [('radio city', 'located in', 'india'), ('radio "
        "city', 'started on', '3 july 2001')]}\n\n[[ ## completed ## ]]"
    ),
    (
        '[[ ## fact_after_filter ## ]]\n{"fact": [["radio citi", "started in", "july 2001"], '
        '["cafe", "owned", "jose"], ["radio city", "located in", "india"]]}'
    ),
    '[[ ## fact_after_filter ## ]]\n{"fact": []}\n\n[[ ## completed ## ]]',
    "I think the first one.",
]
QA_DOCS = [
    "Radio City\nRadio City is India's first private FM radio station.",
    "Oslo\nOslo is the capital of Norway, prices in $.",
]
QA_REPLIES = ["Radio City started in 2001.\nAnswer: 3 July 2001", "No answer marker here"]
STANDINS = {
    "__init__.py": "",
    "llm/__init__.py": "BaseLLM = object\n_get_llm_class = None\n",
    "embedding_model/__init__.py": (
        "BaseEmbeddingModel = object\n_get_embedding_model_class = None\n"
    ),
}


@contextlib.contextmanager
def official_package(checkout: Path) -> Iterator[None]:
    """``src/hipporag`` importable as ``hipporag`` from a scratch copy whose :data:`STANDINS` files
    are inert."""
    with tempfile.TemporaryDirectory() as scratch:
        package = Path(scratch) / "hipporag"
        shutil.copytree(checkout / "src" / "hipporag", package)
        for name, text in STANDINS.items():
            (package / name).write_text(text)
        sys.path.insert(0, scratch)
        try:
            yield
        finally:
            sys.path.remove(scratch)


class Recorder:
    """The official ``infer``'s shape: records each call, replies from a list in turn."""

    def __init__(self, replies: list[tuple[str, str]]):
        self.replies, self.calls = list(replies), []

    def infer(
        self, messages: list[dict[str, str]], **kwargs: Any
    ) -> tuple[str, dict[str, Any], bool]:
        self.calls.append({"messages": messages, "kwargs": kwargs})
        reply, finish = self.replies.pop(0)
        return reply, {"finish_reason": finish, "prompt_tokens": 0, "completion_tokens": 0}, False


def run_official(checkout: Path) -> dict[str, Any]:
    """The requests and parses described in the module docstring."""
    with official_package(checkout):
        openie_mod = importlib.import_module("hipporag.information_extraction.openie_openai")
        rerank_mod = importlib.import_module("hipporag.rerank")
        hippo_mod = importlib.import_module("hipporag.HippoRAG")
        misc = importlib.import_module("hipporag.utils.misc_utils")
        manager = importlib.import_module("hipporag.prompts.prompt_template_manager")
        out: dict[str, Any] = {
            "openie": [],
            "ner_parses": [],
            "triple_parses": [],
            "filter": [],
            "qa": [],
        }
        for passage in PASSAGES:
            rec = Recorder(
                [
                    ('{"named_entities": ["Radio City", "India", "Café Zürich", "José"]}', "stop"),
                    ('{"triples": []}', "stop"),
                ]
            )
            ie = openie_mod.OpenIE(llm_model=rec)
            ner = ie.ner(chunk_key="c", passage=passage)
            ie.triple_extraction(chunk_key="c", passage=passage, named_entities=ner.unique_entities)
            out["openie"].append(
                {
                    "passage": passage,
                    "entities": ner.unique_entities,
                    "ner": rec.calls[0],
                    "triples": rec.calls[1],
                }
            )
        for reply, finish in NER_REPLIES:
            out["ner_parses"].append(
                {
                    "reply": reply,
                    "finish_reason": finish,
                    "entities": openie_mod.OpenIE(llm_model=Recorder([(reply, finish)]))
                    .ner("c", "p")
                    .unique_entities,
                }
            )
        for reply, finish in TRIPLE_REPLIES:
            found = (
                openie_mod.OpenIE(llm_model=Recorder([(reply, finish)]))
                .triple_extraction("c", "p", [])
                .triples
            )
            out["triple_parses"].append({"reply": reply, "finish_reason": finish, "triples": found})
        for reply in FILTER_REPLIES:
            rec = Recorder([(reply, "stop")])
            host = SimpleNamespace(
                global_config=SimpleNamespace(rerank_dspy_file_path=None, llm_name="gpt-4o-mini"),
                extraction_llm=rec,
            )
            indices, kept, _ = rerank_mod.DSPyFilter(host).rerank(
                QUESTION, list(CANDIDATES), [10, 11, 12], len_after_rerank=5
            )
            out["filter"].append(
                {
                    "reply": reply,
                    "call": rec.calls[0],
                    "indices": indices,
                    "kept": [list(k) for k in kept],
                }
            )
        for reply in QA_REPLIES:
            rec = Recorder([(reply, "stop")])
            roles = {"system": "system", "user": "user", "assistant": "assistant"}
            host = SimpleNamespace(
                global_config=SimpleNamespace(qa_top_k=5, dataset=None),
                qa_llm=rec,
                prompt_template_manager=manager.PromptTemplateManager(role_mapping=roles),
            )
            solutions, _, _ = hippo_mod.HippoRAG.qa(
                host, [misc.QuerySolution(question=QUESTION, docs=list(QA_DOCS))]
            )
            out["qa"].append({"reply": reply, "call": rec.calls[0], "answer": solutions[0].answer})
    return out


#: The graph oracle: passages, each one's OpenIE replies, and questions with the facts the
#: filter keeps.
GRAPH_PASSAGES = {
    "Alice Stone\nAlice Stone was born in New York City and studied physics.": (
        '{"named_entities": ["Alice Stone", "New York City"]}',
        (
            '{"triples": [["Alice Stone", "born in", "New York City"], ["Alice Stone", "studied", '
            '"physics"]]}'
        ),
    ),
    "Bob Reed\nBob Reed moved to New York and taught chemistry.": (
        '{"named_entities": ["Bob Reed", "New York"]}',
        '{"triples": [["Bob Reed", "moved to", "New York"], ["Bob Reed", "taught", "chemistry"]]}',
    ),
    "Physics Prize\nThe physics prize was won by Carol Hart in Paris.": (
        '{"named_entities": ["Carol Hart", "Paris"]}',
        (
            '{"triples": [["Carol Hart", "won", "physics prize"], ["physics prize", "awarded in", '
            '"Paris"]]}'
        ),
    ),
    "Paris\nParis is the capital of France.": (
        '{"named_entities": ["Paris", "France"]}',
        '{"triples": [["Paris", "capital of", "France"]]}',
    ),
    "Chemistry Lab\nThe chemistry lab of Bob Reed is in Boston.": (
        '{"named_entities": ["Bob Reed", "Boston"]}',
        (
            '{"triples": [["chemistry lab", "of", "Bob Reed"], ["chemistry lab", "located in", '
            '"Boston"]]}'
        ),
    ),
    "Weather\nIt rained all week.": ('{"named_entities": []}', '{"triples": []}'),
}
GRAPH_QUESTIONS = {
    "Where was Alice Stone born?": '{"fact": [["alice stone", "born in", "new york city"]]}',
    "Who won the physics prize?": (
        '{"fact": [["carol hart", "won", "physics prize"], ["physics prize", "awarded in", '
        '"paris"]]}'
    ),
    "Where is the chemistry lab of Bob Reed?": (
        '{"fact": [["chemistry lab", "of", "bob reed"], ["chemistry lab", "located in", "boston"]]}'
    ),
    "What is the capital of France?": '{"fact": [["paris", "capital of", "france"]]}',
    "Did it rain?": '{"fact": []}',
}


def graph_replies(messages: list[dict[str, str]]) -> str:
    """The scripted reply of every call of the graph oracle, read from the request."""
    system, last = messages[0]["content"], messages[-1]["content"]
    if system.startswith("Your task is to extract named entities"):
        return GRAPH_PASSAGES[last][0]
    if "RDF" in system:
        return next(v[1] for k, v in GRAPH_PASSAGES.items() if f"```\n{k}\n```" in last)
    question = last.split("[[ ## question ## ]]\n", 1)[1].split("\n", 1)[0]
    return f"[[ ## fact_after_filter ## ]]\n{GRAPH_QUESTIONS[question]}\n\n[[ ## completed ## ]]"


def word_vectors(texts: Any) -> Any:
    """Deterministic unit vectors over the hashed lowercase words (letters and digits) of each text:
    texts sharing words are similar."""
    import hashlib
    import re

    import numpy as np

    out = np.zeros((len(texts), 256), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 256] += 1.0
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


class BagOfWords:
    """The official embedding model's shape (``batch_encode``), with :func:`word_vectors`."""

    def batch_encode(self, texts: Any, instruction: str = "", norm: bool = True) -> Any:
        return word_vectors([texts] if isinstance(texts, str) else list(texts))


class GraphLLM:
    """The official chat model's shape (``infer``), replying by :func:`graph_replies`."""

    def infer(
        self, messages: list[dict[str, str]], **kwargs: Any
    ) -> tuple[str, dict[str, Any], bool]:
        return (
            graph_replies(messages),
            {"finish_reason": "stop", "prompt_tokens": 0, "completion_tokens": 0},
            False,
        )


def run_official_graph(checkout: Path) -> dict[str, Any]:
    """The official graph (every edge with its weight, by node text) and ``retrieve``'s ranking of
    every passage for each question."""
    with official_package(checkout), tempfile.TemporaryDirectory() as save_dir:
        hippo_mod = importlib.import_module("hipporag.HippoRAG")
        config_mod = importlib.import_module("hipporag.utils.config_utils")
        config = config_mod.BaseConfig(
            save_dir=save_dir, llm_name="stub", embedding_model_name="bag-of-words"
        )
        rag = hippo_mod.HippoRAG(
            global_config=config, extraction_llm=GraphLLM(), embedding_model=BagOfWords()
        )
        rag.index(list(GRAPH_PASSAGES))
        content = rag.graph.vs["content"]
        edges = sorted([content[e.source], content[e.target], e["weight"]] for e in rag.graph.es)
        found = rag.retrieve(list(GRAPH_QUESTIONS))
        ranked = [
            {"question": q.question, "docs": q.docs, "scores": [float(x) for x in q.doc_scores]}
            for q in found
        ]
    return {"edges": edges, "retrieved": ranked}


if __name__ == "__main__":
    if sys.argv[1] == "--graph":
        Path(sys.argv[3]).write_text(
            json.dumps(run_official_graph(Path(sys.argv[2])), ensure_ascii=False, indent=1) + "\n",
            encoding="utf-8",
        )
    else:
        Path(sys.argv[2]).write_text(
            json.dumps(run_official(Path(sys.argv[1])), ensure_ascii=False, indent=1) + "\n",
            encoding="utf-8",
        )
