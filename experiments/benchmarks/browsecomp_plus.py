"""BrowseComp-Plus (Chen et al., arXiv 2508.06600): deep research over a fixed corpus.

830 BrowseComp questions over about 100K human-verified web documents, each question with its
evidence and gold documents judged (texttron/BrowseComp-Plus @ 97c637c). Read from disk
(:mod:`longctx.experiments.benchmarks.browsecomp_plus_data`; nothing is fetched at run time).
Two settings, named as the sample's ``dataset``:

- ``n1000`` (``docs_per_query=1000``, the RLM paper's): each question over its own corpus of its
  evidence and gold documents plus seeded negatives, chosen once and cached
  (:mod:`longctx.experiments.benchmarks.browsecomp_plus_corpus`), any N up to the corpus;
- ``full`` (``docs_per_query=None``): every question over the whole corpus, one shared
  :class:`~longctx.retrieval.Corpus`, so retrievers and a search agent index it once
  (``--inject-once`` answers all questions in one unit).

Scored as ``scripts_evaluation/evaluate_run.py`` scores a run: the GRADER_TEMPLATE judge (its
prompt verbatim, its sampling parameters, through :func:`~longctx.experiments.metrics.judge.
call_judge`), accuracy, calibration error, evidence recall of the documents each answer read
(:mod:`longctx.experiments.metrics.reading`) and search calls per question
(:mod:`longctx.experiments.metrics.browsecomp_plus`). ``longctx export --format official`` writes
the run directory that script reads.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks import browsecomp_plus_corpus as bc
from longctx.experiments.benchmarks.base import BENCHMARKS, Sample, data_root, only_known
from longctx.experiments.benchmarks.browsecomp_plus_data import (
    Query,
    corpus_files,
    read_queries,
    release_file,
)
from longctx.experiments.metrics import browsecomp_plus as m
from longctx.experiments.metrics import judge as judge_mod
from longctx.experiments.metrics.reading import Reading
from longctx.retrieval import Corpus, Document, paths
from longctx.retrieval.contract import Question

VERSION = 1
NAME = "browsecomp_plus"
PROMPTS_FILE = Path(__file__).with_name("browsecomp_plus_prompts.json")
#: The official search agents' answer budget (``search_agent/*_client.py --max_tokens`` 10000).
MAX_NEW_TOKENS = 10_000
#: ``evaluate_run.py``'s judge: Qwen3-32B through vLLM with ``temperature=0.7, top_p=0.8,
#: top_k=20, max_tokens=4096`` and ``chat_template_kwargs={"enable_thinking": False}``; as an
#: OpenAI-compatible request (a vLLM server's names), ``top_k`` and ``chat_template_kwargs`` go in
#: the body beside the rest.
JUDGE = judge_mod.JudgeParams(
    temperature=0.7,
    top_p=0.8,
    max_tokens=4096,
    extra_body={"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}},
)
#: The judge model of the official summary (``--model``).
JUDGE_MODEL = "Qwen/Qwen3-32B"
#: ``evaluate_with_openai.py``'s judge: ``client.responses.create(model=, max_output_tokens=1024,
#: input=PROMPT)`` (its ``--max_output_tokens`` default; no sampling parameter, no instructions).
OPENAI_JUDGE = judge_mod.JudgeParams(temperature=None, max_tokens=1024, api="responses")
#: ``evaluate_with_openai.py``'s ``--model`` default.
OPENAI_JUDGE_MODEL = "gpt-4.1"
#: The official evaluators' judges by script: (the prompts file's grader key, the parameters).
JUDGE_SETTINGS: dict[str, tuple[str, judge_mod.JudgeParams]] = {
    "evaluate_run": ("grader", JUDGE),
    "evaluate_with_openai": ("grader_openai", OPENAI_JUDGE),
}


@functools.lru_cache(maxsize=1)
def official_prompts() -> dict[str, str]:
    """The official grader templates and answer format (verbatim, see the file's ``_source``)."""
    data: dict[str, str] = json.loads(PROMPTS_FILE.read_text(encoding="utf-8"))
    return data


def judge_prompt(
    question: str, response: str, correct_answer: str, setting: str = "evaluate_run"
) -> str:
    """``create_judge_prompt``: the GRADER_TEMPLATE of ``setting``'s script filled
    (``evaluate_run.py``'s own; ``evaluate_with_openai.py`` reads ``search_agent/prompts.py``'s)."""
    return official_prompts()[JUDGE_SETTINGS[setting][0]].format(
        question=question, response=response, correct_answer=correct_answer
    )


def _datasets(datasets: Sequence[str] | None, docs_per_query: int | None) -> int | None:
    """``docs_per_query`` from a ``datasets=`` selection (``full`` or ``n<N>``), else as given."""
    if datasets is None:
        return docs_per_query
    names = list(datasets)
    known = [*(n for n in names if re.fullmatch(r"n\d+", n)), "full", f"n{bc.PAPER_DOCUMENTS}"]
    only_known(names, list(dict.fromkeys(known)), NAME)
    if len(names) != 1:
        raise ValueError(f"{NAME}: choose one setting (full or n<N>), got {names}")
    return None if names[0] == "full" else int(names[0][1:])


def _sample(query: Query, corpus: Corpus, setting: dict[str, Any]) -> Sample:
    dataset = "full" if setting["docs_per_query"] == "full" else f"n{setting['docs_per_query']}"
    return Sample(
        sample_id=query.query_id,
        benchmark=NAME,
        dataset=dataset,
        corpus=corpus,
        question=Question(
            text=query.query,
            instruction=official_prompts()["answer_format"],
            metadata={"sample_id": query.query_id},
        ),
        answers=(query.answer,),
        metadata={
            "query_id": query.query_id,
            "question": query.query,
            "evidence_doc_ids": tuple(query.evidence),
            "gold_doc_ids": tuple(query.gold),
            **setting,
        },
    )


def load(
    path: str | Path | None = None,
    *,
    datasets: Sequence[str] | None = None,
    docs_per_query: int | None = bc.PAPER_DOCUMENTS,
    seed: int = 0,
    negatives: bc.NegativesRule = "random",
    query_ids: Sequence[str] | None = None,
    limit: int | None = None,
    cache_dir: str | Path | None = None,
) -> list[Sample]:
    """BrowseComp-Plus samples, one per query, from ``<path or $LONGCTX_DATA_DIR/browsecomp_plus>``.

    Args:
        path: Folder with the decrypted release, the qrels and the corpus (see
            :mod:`~longctx.experiments.benchmarks.browsecomp_plus_data`).
        datasets: ``["full"]`` or ``["n<N>"]``, the setting by name (overrides
            ``docs_per_query``).
        docs_per_query: Documents per question (default 1,000, the RLM paper's); ``None``: the
            whole corpus, shared.
        seed: Seed of the negatives.
        negatives: ``random`` (default, the RLM paper) or ``hard`` (the release's negatives first).
        query_ids: Only these queries (release order kept).
        limit: Only the first ``limit`` queries (read before any document is).
        cache_dir: Where choices are cached (default ``$LONGCTX_CACHE_DIR`` or
            ``~/.cache/longctx``).
    """
    root = data_root(NAME, path)
    n = _datasets(datasets, docs_per_query)
    release = release_file(root)
    queries = read_queries(root)
    if query_ids is not None:
        wanted = {str(q) for q in query_ids}
        queries = [q for q in queries if q.query_id in wanted]
    queries = queries[:limit] if limit else queries
    files = corpus_files(root)
    setting = bc.describe(n, seed, negatives)
    if n is None:
        corpus = Corpus(list(bc.documents_for(files, None).values()))
        return [_sample(q, corpus, setting) for q in queries]
    chosen = bc.selections(
        queries,
        release=release,
        corpus=files,
        n=n,
        seed=seed,
        negatives=negatives,
        cache_dir=Path(cache_dir) if cache_dir else paths.default_cache_dir(),
    )
    docs = bc.documents_for(files, {d for ids in chosen.values() for d in ids})
    return [_sample(q, Corpus([docs[d] for d in chosen[q.query_id]]), setting) for q in queries]


def _document(doc: Document) -> str:
    return f"Document [{doc.doc_id}]:\n{doc.text}"


def prompt(sample: Sample, context: str | None = None) -> str:
    """The full-context prompt (ours; the official code has none without a search tool): the
    documents, each headed by its docid (or ``context``), then the question and the official
    answer format."""
    docs = "\n\n".join(_document(d) for d in sample.corpus) if context is None else context
    return f"{docs}\n\nQuestion: {sample.question.text}\n\n{sample.question.instruction}"


def protocol(sample: Sample) -> dict[str, Any]:
    """The official search agents' answer budget."""
    return {"max_new_tokens": MAX_NEW_TOKENS}


def judge_answer(
    judge: Any, sample: Sample, response: str, setting: str = "evaluate_run"
) -> tuple[dict[str, Any], bool]:
    """(the official reading of the judge's reply, judge error) for one completed response, with
    ``setting``'s prompt and call (:data:`JUDGE_SETTINGS`; both scripts parse alike)."""
    reply = judge_mod.call_judge(
        judge,
        judge_prompt(sample.metadata["question"], response, sample.answers[0], setting),
        params=JUDGE_SETTINGS[setting][1],
    )
    return m.parse_judge_reply(reply.text), reply.error is not None


def _fallback(sample: Sample, response: str) -> dict[str, Any]:
    """Without a judge (declared): correct when the gold answer, case and spacing aside, is in the
    ``Exact Answer:`` line (else the reply); confidence from ``Confidence:``, 100 without one."""
    exact = re.search(r"exact answer:\s*(.*)", response, re.IGNORECASE)
    said = " ".join((exact.group(1) if exact else response).lower().split())
    gold = " ".join(sample.answers[0].lower().split())
    conf = re.search(r"confidence:\s*(\d+(?:\.\d+)?)", response, re.IGNORECASE)
    return {
        "extracted_final_answer": exact.group(1).strip() if exact else None,
        "correct": bool(gold) and gold in said,
        "confidence": min(float(conf.group(1)), 100) if conf else 100.0,
        "parse_error": False,
    }


def _verdict(sample: Sample, pred: Any, judge: Any, setting: str) -> tuple[dict[str, Any], bool]:
    reading = pred.reading or Reading()
    response = pred.text_or_empty
    if response == "" or not reading.completed:  # the official script judges neither
        return {"parse_error": True, "correct": None, "confidence": None}, False
    if judge is None:
        return _fallback(sample, response), False
    return judge_answer(judge, sample, response, setting)


@BENCHMARKS.register(NAME, version=VERSION, load=load, prompt=prompt, protocol=protocol)
def score(
    pairs: Sequence[tuple[Sample, Any]],
    *,
    judge: Any = None,
    judge_setting: str = "evaluate_run",
    **_: Any,
) -> dict:
    """The official summary's figures over ``pairs``: ``Accuracy (%)`` (also ``overall``),
    ``Recall (%)``, ``Calibration Error (%)``, ``avg_tool_stats`` (``search_calls``: its
    ``search``), per setting and per query.

    A failed or budget-stopped answer, or an empty one, is not judged and counts wrong (as
    ``status != "completed"`` does officially); a judge error counts wrong and is counted.

    Args:
        pairs: ``(Sample, Prediction)`` pairs; a prediction's ``reading`` says what it read
            (``None``: nothing known, recall 0 as an export without ``retrieved_docids``).
        judge: A LangChain chat model (Qwen3-32B officially), sent :data:`JUDGE`'s parameters;
            without one a declared fallback (the gold answer in the ``Exact Answer:`` line).
        judge_setting: Which official evaluator's judge: ``evaluate_run`` (the leaderboard's,
            above) or ``evaluate_with_openai`` (its other GRADER_TEMPLATE over OpenAI's
            Responses API, gpt-4.1 officially: ``judge`` must be an ``openai:MODEL`` model).
    """
    if judge_setting not in JUDGE_SETTINGS:
        raise ValueError(
            f"{NAME}: judge_setting={judge_setting!r}; known: {', '.join(JUDGE_SETTINGS)}"
        )
    rows: list[dict[str, Any]] = []
    errors = 0
    for sample, pred in pairs:
        verdict, error = _verdict(sample, pred, judge, judge_setting)
        errors += error
        reading = pred.reading or Reading(completed=not pred.failed)
        read = reading.documents(d.doc_id for d in sample.corpus)
        rows.append(
            {
                "query_id": sample.metadata["query_id"],
                "dataset": sample.dataset,
                "correct": verdict.get("correct"),
                "confidence": None if verdict.get("parse_error") else verdict.get("confidence"),
                "recall": m.evidence_recall(read, sample.metadata["evidence_doc_ids"]),
                "tool_calls": dict(reading.tool_calls),
                "extracted_final_answer": verdict.get("extracted_final_answer"),
            }
        )
    overall = _figures(rows)
    datasets = {d: _figures([r for r in rows if r["dataset"] == d]) for d in _order(rows)}
    return {
        "overall": overall["Accuracy (%)"],
        **overall,
        "datasets": datasets,
        **_table(datasets),
        "n": len(rows),
        "n_failed": sum(1 for _, p in pairs if p.failed),
        "n_judge_errors": errors,
        "judge": "llm" if judge is not None else "none",
        "judge_setting": judge_setting if judge is not None else None,
        "per_query": rows,
        "per_sample": {
            s.sample_id: 100.0 if r["correct"] else 0.0 for (s, _), r in zip(pairs, rows)
        },
    }


#: The report's table rows (``report/by_task_length.md``): figure -> its key in the summary.
TABLE_ROWS = {
    "accuracy (%)": "Accuracy (%)",
    "evidence recall (%)": "Recall (%)",
    "calibration error (%)": "Calibration Error (%)",
    "search calls / question": "search_calls",
}


def _table(datasets: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The report's table: the official figures (rows) per corpus setting (columns)."""
    return {
        "tasks": {
            row: {d: figures[key] for d, figures in datasets.items()}
            for row, key in TABLE_ROWS.items()
        },
        "lengths": list(datasets),
        "table_title": "the official figures per corpus setting",
        "table_note": (
            "Rows: evaluate_run.py's figures (search calls: its avg_tool_stats 'search'); columns: "
            "the corpus setting (n<N>: N documents per question; full: the whole corpus)."
        ),
    }


def _order(rows: Sequence[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["dataset"] for r in rows))


def _figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    figures = m.summary(
        [r["correct"] for r in rows],
        [r["confidence"] for r in rows],
        [r["recall"] for r in rows],
        [r["tool_calls"] for r in rows],
    )
    return figures | {"search_calls": figures["avg_tool_stats"].get("search", 0.0)}
