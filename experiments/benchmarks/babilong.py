"""BABILong (Kuratov et al., NeurIPS 2024): bAbI facts hidden in PG-19 text, 0 to 10M tokens.

Official code booydar/babilong @ 7a6efee; data ``RMT-team/babilong`` (100 samples a task) and
``RMT-team/babilong-1k-samples``: one hub config per length (``0k`` ... ``1M``, ``10M``), one split
per task (``qa1`` ... ``qa20``), records ``{input, question, target}``. Files are found, for a
task and a length, in any of these layouts under the data folder:

- ``{length}/{task}.jsonl`` (or ``.json`` / ``.parquet``): the plain layout, what
  ``experiments.babilong_gen`` writes;
- ``{length}/{task}-00000-of-0000N.parquet``: the hub's per-length files (1k-samples, later 100-sample);
- ``{task}/{length}-00000-of-00001.parquet``: the 100-sample set's earlier per-task files;
- ``{task}/{length}.json``: what the official ``data/create_tasks.py`` writes.

Missing files come from the hub through ``datasets`` (``load_dataset(repo, length, split=task)``,
as ``run_model_on_babilong.py`` loads them) when the ``hub`` extra is installed.

The prompt is ``get_formatted_input`` with ``DEFAULT_TEMPLATE`` and the task's ``DEFAULT_PROMPTS``
(``babilong_prompts.json``, the official dict verbatim), each part on or off by the run script's
three switches (``instruction``, ``examples``, ``post_prompt``); ``chat_template`` says whether the
prompt goes as a chat user message or as a raw completion. Scoring is ``compare_answers``
(:mod:`experiments.metrics.babilong`); the table is accuracy per task x length.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from experiments.benchmarks.base import (
    BENCHMARKS,
    BenchmarkDataError,
    Sample,
    data_root,
    find_file,
    load_from_hub,
    only_known,
    read_records,
)
from experiments.metrics import babilong as m
from retrieval import Corpus, Document
from retrieval.contract import Question

VERSION = 1

TASKS = tuple(f"qa{i}" for i in range(1, 21))
#: ``collect_results.py`` ``LENGTHS``: the column order of the official tables.
LENGTHS = (
    "0k",
    "1k",
    "2k",
    "4k",
    "8k",
    "16k",
    "32k",
    "64k",
    "128k",
    "256k",
    "512k",
    "1M",
    "2M",
    "10M",
)
_LENGTH = re.compile(r"(\d+)([kM])")
#: The leaderboard's ``avg`` row averages the first five tasks (``get_results_table``).
AVG_TASKS = TASKS[:5]
#: ``--dataset_name`` choices: 100 samples per task and length, or 1,000 (up to 32k).
HUB_REPOS = {"100": "RMT-team/babilong", "1k": "RMT-team/babilong-1k-samples"}

#: ``prompts.py``: ``TASK_TEMPLATE``, ``USER_TEMPLATE`` and ``DEFAULT_TEMPLATE``, and ``DEFAULT_PROMPTS`` per task.
TASK_TEMPLATE = "{instruction}\n\n{examples}\n\n{post_prompt}"
USER_TEMPLATE = "<context>\n{context}\n</context>\n\nQuestion: {question}"
DEFAULT_TEMPLATE = f"{TASK_TEMPLATE}\n\n{USER_TEMPLATE}"
DEFAULT_PROMPTS: dict[str, dict[str, str]] = json.loads(
    resources.files(__package__).joinpath("babilong_prompts.json").read_text("utf-8")
)
#: The prompt parts the run script switches on or off (``--use_instruction`` ...).
SWITCHES = ("instruction", "examples", "post_prompt")

#: ``run_model_on_babilong.py`` ``generate_kwargs``: 20 new tokens, greedy (temperature 0.0 through an API).
MAX_NEW_TOKENS = 20
TEMPERATURE = 0.0
#: The ``generate_kwargs`` the run script saves beside its CSV (temperature as its API path sends it; no tokenizer, so no pad id).
GENERATE_KWARGS = {"max_new_tokens": MAX_NEW_TOKENS, "max_length": None, "num_beams": 1, "do_sample": False, "temperature": TEMPERATURE,
                   "top_p": None, "top_k": None, "pad_token_id": None}  # fmt: skip
FIELDS = ("input", "question", "target")


def length_tokens(name: str) -> int:
    """Tokens of a length name: ``0k`` -> 0, ``16k`` -> 16,000, ``10M`` -> 10,000,000 (any ``<N>k`` / ``<N>M``, e.g. a generated ``4M``)."""
    match = _LENGTH.fullmatch(name)
    if match is None:
        raise ValueError(f"Length {name!r}: use <N>k or <N>M, e.g. 16k, 1M, 10M.")
    return int(match.group(1)) * (1000 if match.group(2) == "k" else 1_000_000)


def _lengths(folder: Path, requested: Sequence[str] | None) -> list[str]:
    """The requested lengths (checked), else the official ones and any other ``<N>k`` / ``<N>M`` folder on disk, shortest first."""
    if requested is not None:
        bad = [n for n in requested if not _LENGTH.fullmatch(n)]
        if bad:
            raise KeyError(
                f"babilong: unknown length(s) {bad}; known: {', '.join(LENGTHS)} or any <N>k / <N>M"
            )
        return list(requested)
    found = (
        {p.name for p in folder.iterdir() if p.is_dir() and _LENGTH.fullmatch(p.name)}
        if folder.is_dir()
        else set()
    )
    return sorted(set(LENGTHS) | found, key=length_tokens)


def formatted_input(
    context: str, question: str, *, instruction: str, examples: str, post_prompt: str
) -> str:
    """``get_formatted_input`` with ``DEFAULT_TEMPLATE``: the parts filled in, the context stripped, the whole stripped."""
    text = DEFAULT_TEMPLATE.format(
        instruction=instruction,
        examples=examples,
        post_prompt=post_prompt,
        context=context.strip(),
        question=question,
    )
    return text.strip()


def prompt_name(switches: dict[str, bool], chat_template: bool) -> str:
    """The run script's ``prompt_name`` (file-name suffix): ``instruction_yes_examples_yes_post_prompt_yes_chat_template_yes_system_prompt_no``."""
    flags = [
        *(switches[k] for k in SWITCHES),
        chat_template,
        False,
    ]  # no system prompt: the script's default ''
    return "_".join(
        f"{k}_{'yes' if on else 'no'}"
        for k, on in zip((*SWITCHES, "chat_template", "system_prompt"), flags, strict=True)
    )


def _candidates(folder: Path, task: str, length: str) -> list[Path]:
    """The files holding ``task`` at ``length`` in the first layout that has them (module docstring)."""
    plain = find_file(folder / length, task)
    if plain is not None:
        return [plain]
    for sub, pattern in (
        (folder / length, f"{task}-*-of-*.parquet"),
        (folder / task, f"{length}-*-of-*.parquet"),
    ):
        shards = sorted(sub.glob(pattern)) if sub.is_dir() else []
        if shards:
            return shards
    made = find_file(folder / task, length)
    return [made] if made is not None else []


def _checked(record: Any, where: str) -> dict[str, Any]:
    """A record's three fields (and a generated record's ``supporting_facts`` / ``supporting_spans``), or a one-line
    :class:`BenchmarkDataError` naming the file, record and field."""
    if not isinstance(record, dict):
        raise BenchmarkDataError(
            f"BABILong {where}: expected an object with fields {', '.join(FIELDS)}, got {type(record).__name__}."
        )
    for name in FIELDS:
        value = record.get(name)
        if not isinstance(value, str) or not value.strip():
            problem = (
                "missing"
                if name not in record
                else f"not a non-empty string ({type(value).__name__})"
            )
            raise BenchmarkDataError(f"BABILong {where}: field {name!r} is {problem}.")
    out: dict[str, Any] = {name: record[name] for name in FIELDS}
    support = record.get("supporting_facts")
    if support is not None:
        if not isinstance(support, list) or not all(isinstance(f, str) for f in support):
            raise BenchmarkDataError(
                f"BABILong {where}: field 'supporting_facts' is not a list of strings."
            )
        out["supporting_facts"] = list(support)
        spans = _spans(record, support, where)
        if spans is not None:
            out["supporting_spans"] = spans
    return out


def _spans(record: dict[str, Any], support: list[str], where: str) -> list[tuple[int, int]] | None:
    """Where each supporting fact is in ``input``: the record's ``supporting_spans`` (checked), else each fact's only
    occurrence; ``None`` when a fact occurs more than once (which one supports the answer is not known)."""
    text, given = record["input"], record.get("supporting_spans")
    if given is None:
        starts = [text.find(f) for f in support]
        if any(a < 0 or text.count(f) != 1 for a, f in zip(starts, support, strict=True)):
            return None
        return [(a, a + len(f)) for a, f in zip(starts, support, strict=True)]
    ok = (
        isinstance(given, list)
        and len(given) == len(support)
        and all(
            isinstance(g, list)
            and len(g) == 2
            and all(isinstance(x, int) for x in g)
            and text[g[0] : g[1]] == f
            for g, f in zip(given, support)
        )
    )
    if not ok:
        raise BenchmarkDataError(
            f"BABILong {where}: field 'supporting_spans' is not one [start, end] of 'input' per supporting fact."
        )
    return [(g[0], g[1]) for g in given]


def _records(folder: Path, task: str, length: str, hub_repo: str | None) -> list[dict[str, Any]]:
    files = _candidates(folder, task, length)
    if not files:
        expected = folder / length / f"{task}.{{jsonl,json,parquet}}"
        if hub_repo is None:
            raise BenchmarkDataError(
                f"BABILong {task} at {length}: no file {expected}; see docs/benchmarks-data.md."
            )
        rows = load_from_hub(
            hub_repo, length, task, what=f"BABILong {task} at {length}", expected=expected
        )
        return [_checked(r, f"{hub_repo} {length}/{task} record {i}") for i, r in enumerate(rows)]
    out: list[dict[str, Any]] = []
    for path in files:
        try:
            rows = read_records(path)
        except (ValueError, OSError) as exc:
            raise BenchmarkDataError(
                f"BABILong {path}: unreadable ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})."
            ) from None
        out += [_checked(r, f"{path} record {i}") for i, r in enumerate(rows)]
    return out


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


def load(path: str | Path | None = None, *, datasets: Sequence[str] | None = None, lengths: Sequence[str] | None = None,
         instruction: bool = True, examples: bool = True, post_prompt: bool = True, chat_template: bool = True,
         samples: str = "100") -> list[Sample]:  # fmt: skip
    """BABILong samples from ``<path or $LONGCTX_DATA_DIR/babilong>`` (layouts in the module docstring).

    Args:
        path: Data folder.
        datasets: Tasks (``qa1`` ... ``qa20``); default every task found on disk.
        lengths: Lengths (``0k`` ... ``10M``); default every length found on disk. Where both are named,
            a task x length not on disk is loaded from the hub (``samples``).
        instruction, examples, post_prompt: The run script's prompt switches (all on in the leaderboard's main setup).
        chat_template: The prompt goes as a chat user message (``--use_chat_template``); off: a raw completion.
        samples: ``"100"`` or ``"1k"``: the hub dataset tried for a file that is not on disk.
    """
    if samples not in HUB_REPOS:
        raise KeyError(f"babilong: samples={samples!r}; known: {', '.join(HUB_REPOS)}")
    folder = data_root("babilong", path)
    tasks = only_known(datasets, TASKS, "babilong")
    wanted = _lengths(folder, lengths)
    explicit = (
        datasets is not None and lengths is not None
    )  # both named: a pair not on disk comes from the hub
    pairs = [(t, n) for t in tasks for n in wanted if explicit or _candidates(folder, t, n)]
    if not pairs:
        raise BenchmarkDataError(
            f"BABILong: no {{length}}/{{task}}.jsonl (or hub parquet files) in {folder}; see docs/benchmarks-data.md."
        )
    switches = {"instruction": instruction, "examples": examples, "post_prompt": post_prompt}
    out: list[Sample] = []
    for task, length in pairs:
        for i, record in enumerate(_records(folder, task, length, HUB_REPOS[samples])):
            out.append(_sample(record, task, length, i, switches, chat_template))
    return out


def prompt(sample: Sample, context: str | None = None) -> str:
    """The official prompt around ``context`` (default: the item's own), with the sample's switches."""
    parts = {k: v for k, v in prompt_settings(sample).items() if k in SWITCHES}
    return formatted_input(
        sample.corpus[0].text if context is None else context, sample.question.text, **parts
    )


def prompt_settings(sample: Sample) -> dict[str, Any]:
    """The run script's ``prompt_cfg`` for the sample's task and switches, as its JSON file records it."""
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
    """20 new tokens, greedy, chat template or raw completion as loaded; no input cut (the official loop sends it all)."""
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
    """``get_col_mean`` over the first five tasks per length: ``None`` (the official -1) unless all five have a score."""
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
    """Accuracy x 100 by ``compare_answers``: overall, per task x length (the official table), per-task means, the ``avg`` row.

    Each reply is scored as the official table reads it back from its CSV (:func:`~experiments.metrics.babilong.as_read_back`:
    a reply pandas reads as missing, e.g. ``None``, scores as ""); ``overall_as_replied`` scores the replies
    as given and ``n_read_as_missing`` counts where the two differ in input. A failed call scores 0.
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
