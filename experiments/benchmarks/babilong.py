"""BABILong (Kuratov et al., NeurIPS 2024): bAbI facts hidden in PG-19 text, 0 to 10M tokens.

Official code booydar/babilong @ 7a6efee; data ``RMT-team/babilong`` (100 samples a task) and
``RMT-team/babilong-1k-samples``: one hub config per length (``0k`` ... ``1M``, ``10M``), one split
per task (``qa1`` ... ``qa20``), records ``{input, question, target}``, read from the data folder's
layouts or the hub by :mod:`longctx.experiments.benchmarks.babilong_data`.

The prompt is ``get_formatted_input`` with ``DEFAULT_TEMPLATE`` and the task's ``DEFAULT_PROMPTS``
(``babilong_prompts.json``, the official dict verbatim), each part on or off by the run script's
three switches (``instruction``, ``examples``, ``post_prompt``); ``chat_template`` says whether the
prompt goes as a chat user message or as a raw completion. Scoring is ``compare_answers``
(:mod:`longctx.experiments.metrics.babilong`); the table is accuracy per task x length.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks.babilong_data import (
    length_tokens,
    lengths_in,
    read_task,
    task_files,
)
from longctx.experiments.benchmarks.base import (
    BENCHMARKS,
    BenchmarkDataError,
    Sample,
    data_root,
    only_known,
)
from longctx.experiments.metrics import babilong as m
from longctx.retrieval import Corpus, Document
from longctx.retrieval.contract import Question
from longctx.retrieval.contract.errors import UnknownName

VERSION = 1

TASKS = tuple(f"qa{i}" for i in range(1, 21))
#: The leaderboard's ``avg`` row averages the first five tasks (``get_results_table``).
AVG_TASKS = TASKS[:5]
#: ``--dataset_name`` choices: 100 samples per task and length, or 1,000 (up to 32k).
HUB_REPOS = {"100": "RMT-team/babilong", "1k": "RMT-team/babilong-1k-samples"}

#: ``prompts.py``: ``TASK_TEMPLATE``, ``USER_TEMPLATE`` and ``DEFAULT_TEMPLATE``, and
#: ``DEFAULT_PROMPTS`` per task.
TASK_TEMPLATE = "{instruction}\n\n{examples}\n\n{post_prompt}"
USER_TEMPLATE = "<context>\n{context}\n</context>\n\nQuestion: {question}"
DEFAULT_TEMPLATE = f"{TASK_TEMPLATE}\n\n{USER_TEMPLATE}"
DEFAULT_PROMPTS: dict[str, dict[str, str]] = json.loads(
    resources.files(__package__).joinpath("babilong_prompts.json").read_text("utf-8")
)
#: The prompt parts the run script switches on or off (``--use_instruction`` ...).
SWITCHES = ("instruction", "examples", "post_prompt")

#: ``run_model_on_babilong.py`` ``generate_kwargs`` (its local path; its ``--api_url`` path sends no
#: budget) and the OpenAI-API notebook's ``max_tokens``: 20 new tokens, greedy (temperature 0.0
#: through an API). Every run sends the 20 (docs/protocols.md).
MAX_NEW_TOKENS = 20
TEMPERATURE = 0.0
#: The ``generate_kwargs`` the run script saves beside its CSV (temperature as its API path sends
#: it; no tokenizer, so no pad id).
GENERATE_KWARGS = {
    "max_new_tokens": MAX_NEW_TOKENS,
    "max_length": None,
    "num_beams": 1,
    "do_sample": False,
    "temperature": TEMPERATURE,
    "top_p": None,
    "top_k": None,
    "pad_token_id": None,
}


def formatted_input(
    context: str, question: str, *, instruction: str, examples: str, post_prompt: str
) -> str:
    """``get_formatted_input`` with ``DEFAULT_TEMPLATE``: the parts filled in, the context stripped,
    the whole stripped."""
    text = DEFAULT_TEMPLATE.format(
        instruction=instruction,
        examples=examples,
        post_prompt=post_prompt,
        context=context.strip(),
        question=question,
    )
    return text.strip()


def prompt_name(switches: dict[str, bool], chat_template: bool) -> str:
    """The run script's ``prompt_name`` (file-name suffix):
    ``instruction_yes_examples_yes_post_prompt_yes_chat_template_yes_system_prompt_no``."""
    flags = [
        *(switches[k] for k in SWITCHES),
        chat_template,
        False,
    ]  # no system prompt: the script's default ''
    return "_".join(
        f"{k}_{'yes' if on else 'no'}"
        for k, on in zip((*SWITCHES, "chat_template", "system_prompt"), flags, strict=True)
    )


def _sample(
    record: dict[str, Any],
    task: str,
    length: str,
    index: int,
    switches: dict[str, bool],
    chat_template: bool,
) -> Sample:
    sample_id = f"{task}-{length}-{index}"
    doc_id = f"{sample_id}-context"
    post = DEFAULT_PROMPTS[task]["post_prompt"] if switches["post_prompt"] else None
    return Sample(
        sample_id=sample_id,
        benchmark="babilong",
        dataset=task,
        corpus=Corpus(
            [Document(doc_id=doc_id, text=record["input"], title=f"babilong {task} {length}")]
        ),
        question=Question(
            text=record["question"],
            instruction=post,
            metadata={"sample_id": sample_id, "dataset": task},
        ),
        answers=(record["target"],),
        metadata={
            "task": task,
            "length": length,
            "index": index,
            "switches": dict(switches),
            "chat_template": chat_template,
        }
        | (
            {"supporting_facts": tuple(record["supporting_facts"])}
            if "supporting_facts" in record
            else {}
        )
        | (
            {"evidence_spans": tuple((doc_id, a, b) for a, b in record["supporting_spans"])}
            if "supporting_spans" in record
            else {}
        ),
    )


def load(
    path: str | Path | None = None,
    *,
    datasets: Sequence[str] | None = None,
    lengths: Sequence[str] | None = None,
    instruction: bool = True,
    examples: bool = True,
    post_prompt: bool = True,
    chat_template: bool = True,
    samples: str = "100",
) -> list[Sample]:
    """BABILong samples from ``<path or $LONGCTX_DATA_DIR/babilong>`` (layouts in the
    module docstring).

    Args:
        path: Data folder.
        datasets: Tasks (``qa1`` ... ``qa20``); default every task found on disk.
        lengths: Lengths (``0k`` ... ``10M``); default every length found on disk. Where both are
            named, a task x length not on disk is loaded from the hub (``samples``).
        instruction, examples, post_prompt: The run script's prompt switches (all on in the
            leaderboard's main setup).
        chat_template: The prompt goes as a chat user message (``--use_chat_template``); off: a
            raw completion.
        samples: ``"100"`` or ``"1k"``: the hub dataset tried for a file that is not on disk.
    """
    if samples not in HUB_REPOS:
        raise UnknownName(f"babilong: samples={samples!r}; known: {', '.join(HUB_REPOS)}")
    folder = data_root("babilong", path)
    tasks = only_known(datasets, TASKS, "babilong")
    wanted = lengths_in(folder, lengths)
    explicit = (
        datasets is not None and lengths is not None
    )  # both named: a pair not on disk comes from the hub
    pairs = [(t, n) for t in tasks for n in wanted if explicit or task_files(folder, t, n)]
    if not pairs:
        raise BenchmarkDataError(
            f"BABILong: no {{length}}/{{task}}.jsonl (or hub parquet files) in {folder}; see "
            "docs/benchmarks-data.md."
        )
    switches = {"instruction": instruction, "examples": examples, "post_prompt": post_prompt}
    out: list[Sample] = []
    for task, length in pairs:
        for i, record in enumerate(read_task(folder, task, length, HUB_REPOS[samples])):
            out.append(_sample(record, task, length, i, switches, chat_template))
    return out


def prompt(sample: Sample, context: str | None = None) -> str:
    """The official prompt around ``context`` (default: the item's own), with the
    sample's switches."""
    parts = {k: v for k, v in prompt_settings(sample).items() if k in SWITCHES}
    return formatted_input(
        sample.corpus[0].text if context is None else context, sample.question.text, **parts
    )


def prompt_settings(sample: Sample) -> dict[str, Any]:
    """The run script's ``prompt_cfg`` for the sample's task and switches, as its JSON
    file records it."""
    parts = {
        k: DEFAULT_PROMPTS[sample.dataset][k] if sample.metadata["switches"][k] else ""
        for k in SWITCHES
    }
    return parts | {
        "template": DEFAULT_TEMPLATE,
        "chat_template": bool(sample.metadata["chat_template"]),
        "system_prompt": "",
    }


def protocol(sample: Sample) -> dict[str, Any]:
    """20 new tokens, greedy, chat template or raw completion as loaded; no input cut (the official
    loop sends it all)."""
    return {
        "max_new_tokens": MAX_NEW_TOKENS,
        "temperature": TEMPERATURE,
        "chat_template": bool(sample.metadata["chat_template"]),
    }


def _percent(values: Sequence[float]) -> float | None:
    return round(100 * sum(values) / len(values), 2) if values else None


def _official_avg(
    table: dict[str, dict[str, float | None]], lengths: Sequence[str]
) -> dict[str, float | None]:
    """``get_col_mean`` over the first five tasks per length: ``None`` (the official -1) unless all
    five have a score."""
    out: dict[str, float | None] = {}
    for length in lengths:
        col = [table.get(t, {}).get(length) for t in AVG_TASKS]
        out[length] = (
            None
            if any(v is None for v in col)
            else round(sum(v for v in col if v is not None) / len(col), 2)
        )
    return out


@BENCHMARKS.register("babilong", version=VERSION, load=load, prompt=prompt, protocol=protocol)
def score(pairs: Sequence[tuple[Sample, Any]], **_: Any) -> dict:
    """Accuracy x 100 by ``compare_answers``: overall, per task x length (the official table),
    per-task means, the ``avg`` row.

    Each reply is scored as the official table reads it back from its CSV
    (:func:`~experiments.metrics.babilong.as_read_back`: a reply pandas reads as missing, e.g.
    ``None``, scores as ""); ``overall_as_replied`` scores the replies as given and
    ``n_read_as_missing`` counts where the two differ in input. A failed call scores 0.
    """
    cells: dict[str, dict[str, list[float]]] = {}
    per_sample: dict[str, float] = {}
    as_replied: list[float] = []
    missing = 0
    for sample, pred in pairs:
        task, question, target = sample.dataset, sample.question.text, sample.answers[0]
        text = pred.text_or_empty
        read = m.as_read_back(text)
        missing += bool(text.strip()) and not read
        ok = 0.0 if pred.failed else m.babilong_match(read, target, task=task, question=question)
        as_replied.append(
            0.0 if pred.failed else m.babilong_match(text, target, task=task, question=question)
        )
        per_sample[sample.sample_id] = 100.0 * ok
        cells.setdefault(task, {}).setdefault(sample.metadata["length"], []).append(ok)
    tasks = [t for t in TASKS if t in cells]
    lengths = sorted({n for t in tasks for n in cells[t]}, key=length_tokens)
    table = {t: {n: _percent(cells[t][n]) for n in lengths if n in cells[t]} for t in tasks}
    return {
        "overall": _percent([v / 100 for v in per_sample.values()]),
        "overall_as_replied": _percent(as_replied),
        "tasks": table,
        "task_means": {
            t: round(sum(v for v in row.values() if v is not None) / len(row), 2)
            for t, row in table.items()
            if row
        },
        "lengths": {n: _percent([v for t in tasks for v in cells[t].get(n, [])]) for n in lengths},
        "avg_qa1_qa5": _official_avg(table, lengths),
        "n": len(pairs),
        "n_failed": sum(1 for _, p in pairs if p.failed),
        "n_read_as_missing": missing,
        "per_sample": per_sample,
    }
