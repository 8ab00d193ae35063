"""Official prediction files from a run folder, so each benchmark's own scorer can check ours.

``longctx export RUN --format official`` turns ``results.jsonl`` into the files the
official evaluation scripts read, one "model" per strategy (the strategy name):

- longbench: ``pred/<strategy>/<dataset>.jsonl``, read by LongBench ``eval.py``;
- longbench_e: ``pred_e/<strategy>/<dataset>.jsonl``, read by ``eval.py --e``;
- longbench_v2: ``results/<strategy>.jsonl``, read by LongBench v2 ``result.py``;
- lveval: ``outputs/<strategy>/<dataset>_<level>.jsonl``, read by LV-Eval ``evaluation.py``;
- loong: ``output/<strategy>/loong_generate.jsonl``, read by Loong's ``step3`` (judge)
  and ``step4``;
- corpusqa: ``runs/<strategy>_<file>.jsonl`` (``_`` in the strategy becomes ``-``), read by
  ``src/eval.py``;
- ruler_hqa: ``results/ruler_hqa_<docs>/<strategy>.jsonl``, read by MemAgent's ``visualize.py``;
- babilong: ``babilong_evals/longctx/<strategy>/<task>_<length>_<prompt switches>.csv``
  (``target, output, question``) and its ``.json`` settings, read by BABILong's
  ``collect_results.py --model_name longctx/<strategy>``;
- oolong: ``results/<synth|real>/<strategy>/full_output.jsonl`` (the official per-item records,
  scored by the official functions' rules, in the official run order) and ``overall.txt``: the
  official ``eval_script_batched.py`` run with ``--model <strategy>`` over that folder resumes
  from the file, finds nothing left to ask, and prints the overall from its scores.
- browsecomp_plus: ``runs/<strategy>/<query_id>.json`` (``query_id, tool_call_counts, status,
  retrieved_docids, result``), the run directory BrowseComp-Plus's ``evaluate_run.py`` reads.

Each line carries the keys the official script reads, with the values the official
prediction script would have written. Failed calls follow the official prediction
script too: LongBench v1/E and LV-Eval (local generation, no failure) get ``pred: ""``;
Loong writes ``generate_response: ""`` as its ``api()`` does; LongBench v2, CorpusQA and
MemAgent's script never write a failed item, so neither do we (the count is returned).
The scored text is the row's ``prediction``, the text ``longctx report`` scores, except where
the official scorer extracts the answer from the whole reply itself (:data:`WHOLE_REPLY`).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks import babilong as bl
from longctx.experiments.benchmarks import oolong as ol
from longctx.experiments.benchmarks.base import Sample
from longctx.experiments.benchmarks.predictions import final_reply
from longctx.experiments.metrics import longbench_v2 as v2
from longctx.experiments.metrics import oolong as m_oolong
from longctx.experiments.metrics import ruler_hqa as rq
from longctx.experiments.metrics.reading import Reading, reading_of
from longctx.experiments.runner import (
    MANIFEST_FILE,
    latest_rows,
    manifest_config,
    read_rows,
    run_samples,
)

#: Export formats: the official scripts' layouts (the only one so far).
FORMATS = ("official",)


@dataclass(frozen=True)
class ExportedFile:
    """One written file: where, how many lines, and how many failed answers were left out."""

    path: Path
    lines: int
    omitted_failed: int = 0


@dataclass(frozen=True)
class Answered:
    """What a row gives its official line: the text (``None``: the call failed) and, for a
    two-call chain-of-thought answer (LongBench v2 ``setting=cot``), the first call's reply."""

    text: str | None
    reasoning: str | None = None
    reading: Reading | None = None


#: A sample and what its row answered.
Pair = tuple[Sample, Answered]


def _jsonl(path: Path, lines: Iterable[dict[str, Any]]) -> int:
    """Write ``lines`` to ``path`` (parents created, replaced atomically); the line count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    n = 0
    with tmp.open("w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
            n += 1
    tmp.replace(path)
    return n


def _grouped(pairs: Sequence[Pair], key: Callable[[Sample], str]) -> dict[str, list[Pair]]:
    groups: dict[str, list[Pair]] = {}
    for sample, answered in pairs:
        groups.setdefault(key(sample), []).append((sample, answered))
    return groups


def longbench_v1_line(sample: Sample, text: str | None) -> dict[str, Any]:
    """LongBench ``pred.py``'s line: ``pred, answers, all_classes, length``."""
    md = sample.metadata
    return {
        "pred": text or "",
        "answers": list(sample.answers),
        "all_classes": md.get("all_classes") or None,
        "length": md.get("length"),
    }


def longbench_v2_line(sample: Sample, text: str, reasoning: str | None = None) -> dict[str, Any]:
    """LongBench v2 ``pred.py``'s line: the item (context cut to 1,000 characters), response, pred,
    judge; in the CoT setting (``pred.py --cot``) ``response_cot`` before ``response``: the
    reasoning call's reply, stripped, or ``None`` where the strategy answered in one call (it made
    no reasoning call)."""
    md, choices = sample.metadata, sample.question.choices or {}
    response = text.strip()
    pred = v2.extract_choice(response)
    item = {
        "_id": sample.sample_id,
        **{k: md.get(k) for k in ("domain", "sub_domain", "difficulty", "length")},
    }
    item |= {
        "question": sample.question.text,
        **{f"choice_{k}": choices.get(k) for k in "ABCD"},
        "answer": sample.answers[0],
    }
    item |= {"context": sample.corpus[0].text[:1000]}
    if md.get("setting") == "cot":
        item |= {"response_cot": reasoning.strip() if reasoning is not None else None}
    return item | {"response": response, "pred": pred, "judge": pred == sample.answers[0]}


def lveval_line(sample: Sample, text: str | None) -> dict[str, Any]:
    """LV-Eval ``prediction.py``'s line: ``pred, answers, gold_ans, input, all_classes, length``."""
    md = sample.metadata
    return {
        "pred": text or "",
        "answers": list(sample.answers),
        "gold_ans": md.get("answer_keywords"),
        "input": sample.question.text,
        "all_classes": None,
        "length": md.get("length"),
    }


def loong_line(sample: Sample, text: str | None) -> dict[str, Any]:
    """Loong ``step2``'s line: the ``loong.jsonl`` item plus ``generate_response`` ("" when
    generation failed)."""
    md = sample.metadata
    return {
        "id": sample.sample_id,
        "type": md["type"],
        "level": md["level"],
        "set": md["set"],
        "question": sample.question.text,
        "instruction": md["instruction"],
        "prompt_template": md["prompt_template"],
        "doc": list(md["doc_names"]),
        "answer": md.get("answer_raw", sample.answers[0]),
        "generate_response": text or "",
    }


def corpusqa_line(sample: Sample, text: str, model: str) -> dict[str, Any]:
    """CorpusQA ``infer.py``'s line: ``id, question, answer, response, model``."""
    answer = sample.metadata.get("answer_raw", sample.answers[0])
    return {
        "id": sample.sample_id,
        "question": sample.metadata["question"],
        "answer": answer,
        "response": text.strip(),
        "model": model,
    }


def ruler_hqa_line(sample: Sample, text: str) -> dict[str, Any]:
    """MemAgent ``ruler_hqa.py``'s line: the item without its context, response, pred and the
    judge_* scores."""
    md = sample.metadata
    response = text.strip()
    pred = rq.official_prediction(response)
    scores = rq.item_scores(pred, sample.answers[0]) if pred else {"f1": 0, "em": 0, "sub_em": 0}
    item = {
        "input": sample.question.text,
        "answers": list(sample.answers),
        "num_docs": md["num_docs"],
        "index": md["index"],
        "_id": md["position"],
    }
    return (
        item
        | {"response": response, "answer": sample.answers[0], "pred": pred}
        | {f"judge_{k}": v for k, v in scores.items()}
    )


def _files(
    groups: dict[str, list[Pair]],
    path: Callable[[str], Path],
    line: Callable[[Sample, str | None], dict[str, Any]],
) -> list[ExportedFile]:
    """One file per group, every pair written (failed ones with the empty prediction)."""
    return [
        ExportedFile(path(name), _jsonl(path(name), (line(s, a.text) for s, a in pairs)))
        for name, pairs in groups.items()
    ]


def _files_without_failed(
    groups: dict[str, list[Pair]],
    path: Callable[[str], Path],
    line: Callable[[Sample, Answered], dict[str, Any]],
) -> list[ExportedFile]:
    """One file per group, failed pairs left out (counted in ``omitted_failed``)."""
    files = []
    for name, pairs in groups.items():
        kept = [(s, a) for s, a in pairs if a.text is not None]
        files.append(
            ExportedFile(
                path(name),
                _jsonl(path(name), (line(s, a) for s, a in kept)),
                omitted_failed=len(pairs) - len(kept),
            )
        )
    return files


def _write_longbench(
    pairs: Sequence[Pair], out: Path, label: str, folder: str
) -> list[ExportedFile]:
    return _files(
        _grouped(pairs, lambda s: s.dataset),
        lambda d: out / folder / label / f"{d}.jsonl",
        longbench_v1_line,
    )


def _write_longbench_v2(pairs: Sequence[Pair], out: Path, label: str) -> list[ExportedFile]:
    def line(sample: Sample, answered: Answered) -> dict[str, Any]:
        return longbench_v2_line(sample, answered.text or "", answered.reasoning)

    return _files_without_failed(
        {label: list(pairs)}, lambda name: out / "results" / f"{name}.jsonl", line
    )


def _write_lveval(pairs: Sequence[Pair], out: Path, label: str) -> list[ExportedFile]:
    groups = _grouped(pairs, lambda s: f"{s.dataset}_{s.metadata['length_level']}")
    return _files(groups, lambda name: out / "outputs" / label / f"{name}.jsonl", lveval_line)


def _write_loong(pairs: Sequence[Pair], out: Path, label: str) -> list[ExportedFile]:
    return _files(
        {label: list(pairs)},
        lambda name: out / "output" / name / "loong_generate.jsonl",
        loong_line,
    )


def _write_corpusqa(pairs: Sequence[Pair], out: Path, label: str) -> list[ExportedFile]:
    model = label.replace("_", "-")  # eval.py reads the model as the file name's first "_" part
    groups = _grouped(pairs, lambda s: s.metadata["file"])
    return _files_without_failed(
        groups,
        lambda f: out / "runs" / f"{model}_{f}.jsonl",
        lambda s, a: corpusqa_line(s, a.text or "", model),
    )


def _write_ruler_hqa(pairs: Sequence[Pair], out: Path, label: str) -> list[ExportedFile]:
    groups = _grouped(pairs, lambda s: s.dataset.removeprefix("eval_"))
    return _files_without_failed(
        groups,
        lambda n: out / "results" / f"ruler_hqa_{n}" / f"{label}.jsonl",
        lambda s, a: ruler_hqa_line(s, a.text or ""),
    )


def _write_babilong(pairs: Sequence[Pair], out: Path, label: str) -> list[ExportedFile]:
    """``run_model_on_babilong.py``'s files: a pandas-style CSV (index,
    ``target, output, question``; the output stripped, "" for a failed call) and the
    ``{prompt, generate_kwargs}`` JSON beside it, per task, length and prompt setting."""

    def name(s: Sample) -> str:
        prompt = bl.prompt_name(s.metadata["switches"], s.metadata["chat_template"])
        return f"{s.dataset}_{s.metadata['length']}_{prompt}"

    files = []
    for stem, group in _grouped(pairs, name).items():
        path = out / "babilong_evals" / "longctx" / label / f"{stem}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(["", "target", "output", "question"])
            for i, (s, a) in enumerate(sorted(group, key=lambda p: p[0].metadata["index"])):
                writer.writerow([i, s.answers[0], (a.text or "").strip(), s.question.text])
        tmp.replace(path)
        sample = group[0][0]
        settings = {"prompt": bl.prompt_settings(sample), "generate_kwargs": bl.GENERATE_KWARGS}
        path.with_suffix(".json").write_text(
            json.dumps(settings, indent=4, ensure_ascii=False), encoding="utf-8"
        )
        files.append(ExportedFile(path, len(group)))
    return files


def oolong_line(sample: Sample, text: str | None, model: str) -> dict[str, Any]:
    """The official record of one item (``synth_process_response`` / ``dnd_process_response``'s
    ``this_output``); a failed call gets the record of a ``BadRequestError`` (score 0)."""
    md = sample.metadata
    head = {"id": md["id"], "context_window_id": md["context_window_id"]}
    if sample.dataset == "synth" or text is None:
        head["dataset"] = md["source"]
    if text is None:
        gold = str(md["answer"]).strip("[").strip("]")
        return head | {
            "model": model,
            "attempted_parse": "ERROR",
            "parse_confidence": "ERROR",
            "full_answer": "ERROR",
            "score": 0,
            "context_len": md["context_len"],
            "task_group": md.get("task_group"),
            "task": md.get("task"),
            "answer_type": md.get("answer_type"),
            "answer": gold,
        }
    scored = ol.item_score(sample, text)
    return head | {
        "model": model,
        "attempted_parse": scored.attempted_parse,
        "parse_confidence": scored.parse_confidence,
        "full_answer": text,
        "score": scored.score,
        "answer": scored.answer,
    }


def _write_oolong(pairs: Sequence[Pair], out: Path, label: str) -> list[ExportedFile]:
    """``results/<variant>/<label>/full_output.jsonl`` in the official run order (sorted by
    window) and ``overall.txt``."""
    files = []
    for variant, group in _grouped(pairs, lambda s: s.dataset).items():
        ordered = sorted(group, key=lambda p: p[0].metadata["context_window_id"])
        lines = [oolong_line(s, a.text, label) for s, a in ordered]
        folder = out / "results" / variant / label
        n = _jsonl(folder / "full_output.jsonl", lines)
        scores = [line["score"] for line in lines]
        (folder / "overall.txt").write_text(m_oolong.official_summary(label, scores))
        files.append(ExportedFile(folder / "full_output.jsonl", n))
    return files


def browsecomp_plus_line(sample: Sample, answered: Answered) -> dict[str, Any]:
    """One query's file of a BrowseComp-Plus run directory (the README's fields): ``status``
    ``completed`` for a finished answer (``incomplete``: stopped by a budget; ``failed``),
    ``retrieved_docids`` the documents it read (:mod:`longctx.experiments.metrics.reading`),
    ``tool_call_counts`` its searches, ``result`` its reply as one ``output_text``."""
    reading = answered.reading or Reading(completed=answered.text is not None)
    if answered.text is None:
        status = "failed"
    else:
        status = "completed" if reading.completed else "incomplete"
    read = reading.documents(d.doc_id for d in sample.corpus)
    return {
        "query_id": sample.metadata["query_id"],
        "tool_call_counts": dict(reading.tool_calls),
        "status": status,
        "retrieved_docids": sorted(read),
        "result": (
            [{"type": "output_text", "output": answered.text}] if answered.text is not None else []
        ),
    }


def _write_browsecomp_plus(pairs: Sequence[Pair], out: Path, label: str) -> list[ExportedFile]:
    """One JSON file per query under ``runs/<strategy>/``, failed answers too (the official
    evaluator counts them wrong)."""
    files = []
    for sample, answered in pairs:
        path = out / "runs" / label / f"{sample.metadata['query_id']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        line = browsecomp_plus_line(sample, answered)
        tmp.write_text(json.dumps(line, indent=2, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)
        files.append(ExportedFile(path, 1))
    return files


#: benchmark -> writer(pairs, out, label) of its official prediction files.
WRITERS: dict[str, Callable[[Sequence[Pair], Path, str], list[ExportedFile]]] = {
    "longbench": lambda pairs, out, label: _write_longbench(pairs, out, label, "pred"),
    "longbench_e": lambda pairs, out, label: _write_longbench(pairs, out, label, "pred_e"),
    "longbench_v2": _write_longbench_v2,
    "lveval": _write_lveval,
    "loong": _write_loong,
    "corpusqa": _write_corpusqa,
    "ruler_hqa": _write_ruler_hqa,
    "babilong": _write_babilong,
    "oolong": _write_oolong,
    "browsecomp_plus": _write_browsecomp_plus,
}


def export_official(
    run: str | Path, out: str | Path | None = None, *, samples: Sequence[Sample] | None = None
) -> dict[str, list[ExportedFile]]:
    """Write the official prediction files of every strategy in the run folder ``run``.

    Args:
        run: A folder written by ``longctx run``.
        out: Where to write (default ``<run>/official``); files already there are replaced.
        samples: The run's samples (default: reloaded as its manifest describes; the gold
            answers and fields the official files carry come from them).

    Returns:
        strategy -> the files written for it.

    Raises:
        ValueError: ``run`` is not a run folder, or its benchmark has no official format
            (own corpora, synth).
    """
    run = Path(run)
    manifest_path = run / MANIFEST_FILE
    if not manifest_path.is_file():
        raise ValueError(
            f"{run} is not a run folder: no {MANIFEST_FILE} (write one with 'longctx run')."
        )
    cfg = manifest_config(run)  # a corrupt manifest is named, with what to do
    benchmark = cfg["benchmark"]
    if benchmark not in WRITERS:
        raise ValueError(
            f"Benchmark {benchmark!r} has no official prediction format; exportable: "
            f"{', '.join(WRITERS)}."
        )
    samples = list(samples) if samples is not None else run_samples(cfg)
    rows = latest_rows(read_rows(run))
    target = Path(out) if out is not None else run / "official"
    written: dict[str, list[ExportedFile]] = {}
    whole = benchmark in WHOLE_REPLY
    for strategy in cfg["strategies"]:
        pairs = [
            (s, _answered(rows[(s.sample_id, strategy)], whole))
            for s in samples
            if (s.sample_id, strategy) in rows
        ]
        if pairs:
            written[strategy] = WRITERS[benchmark](pairs, target, strategy)
    return written


#: Benchmarks whose official scorer reads the model's whole final reply and extracts the answer
#: itself (MemAgent's ``ruler_hqa.py``: after the last "the answer is"): their files carry that
#: reply, not an extraction a strategy scored (MemAgent's preset ``paper``), which the official
#: scorer would find no phrase in.
WHOLE_REPLY = frozenset({"ruler_hqa"})


def _answered(row: dict[str, Any], whole_reply: bool) -> Answered:
    """What a row's official line carries: the text ``longctx report`` scores, or with
    ``whole_reply`` the whole final reply it was extracted from (:func:`final_reply`; ``None``
    for a failed call), and the reasoning reply of a two-call CoT answer (the ``reasoning`` its
    steps keep)."""
    text = row.get("prediction")
    if row.get("status") != "ok" or not isinstance(text, str) or row.get("error"):
        return Answered(None, reading=reading_of(row))
    reply = final_reply(row) if whole_reply else None
    reasoning = next(
        (
            s["reasoning"]
            for s in reversed(row.get("steps") or [])
            if isinstance(s, dict) and isinstance(s.get("reasoning"), str)
        ),
        None,
    )
    return Answered(reply if reply is not None else text, reasoning, reading_of(row))


#: How the official code scores an export (``{dir}``: the export folder, ``{model}``: a strategy,
#: ``{file}``: a file name under ``runs/``; ``<Repo>``: where that official repository is cloned).
OFFICIAL_COMMANDS = {
    "longbench": "cd {dir} && python <LongBench>/LongBench/eval.py --model {model}",
    "longbench_e": "cd {dir} && python <LongBench>/LongBench/eval.py --model {model} --e",
    "longbench_v2": "cd {dir} && python <LongBench>/result.py",
    "lveval": "python <LVEval>/evaluation.py --input-dir {dir}/outputs/{model}",
    "loong": (
        "cd <Loong>/src && python step3_model_evaluate.py --eval_model gpt4.yaml --output_path "
        "{dir}/output/{model}/loong_generate.jsonl --evaluate_output_path "
        "{dir}/output/{model}/loong_evaluate.jsonl && python step4_cal_metric.py "
        "--evaluate_output_path {dir}/output/{model}/loong_evaluate.jsonl"
    ),
    "corpusqa": "cd {dir} && python <CorpusQA>/src/eval.py --input_file {file} --model deepseek-v3",
    "ruler_hqa": "cd {dir} && python <MemAgent>/taskutils/memory_eval/visualize.py",
    "babilong": (
        "cd <babilong> && python -m babilong.collect_results --evals_path {dir}/babilong_evals "
        "--model_name longctx/{model}"
    ),
    "oolong": (
        "cd {dir} && python <oolong>/src/eval/eval_script_batched.py --model {model} --dataset "
        "synth  # or --dataset real: resumes from results/<dataset>/{model}/full_output.jsonl"
    ),
    "browsecomp_plus": (
        "cd <BrowseComp-Plus> && python scripts_evaluation/evaluate_run.py --input_dir "
        "{dir}/runs/{model} --ground_truth <data>/browsecomp_plus_decrypted.jsonl "
        "--qrel_evidence <data>/qrel_evidence.txt"
    ),
}


def official_command(
    run: str | Path, out: str | Path, strategy: str, files: Sequence[ExportedFile]
) -> str:
    """The shell command that scores ``strategy``'s export with the official code."""
    benchmark = manifest_config(run)["benchmark"]
    first = files[0].path.name if files else ""
    return OFFICIAL_COMMANDS[benchmark].format(dir=Path(out).resolve(), model=strategy, file=first)
