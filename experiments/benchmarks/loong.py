"""Loong: 1,600 multi-document questions (financial, legal, papers), GPT-4-judged.

Layout (as the official repository ships it): ``<root>/loong.jsonl`` plus
``<root>/doc/{financial,paper,legal}``. Documents are assembled as the official
``get_content`` does: financial reports titled ``《name》`` (from the matched file
name), papers titled by their first line, legal judgments ``《判决文书i》`` from
``legal.json``. Document order is shuffled with one seeded RNG consumed item by item
in file order (official seed 1000000007), so orders match the official run when the
same items are loaded in the same order (financial items are shuffled twice, as there).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks.base import (
    BENCHMARKS,
    BenchmarkDataError,
    Sample,
    data_root,
    load_records,
    resolve_inside,
)
from longctx.experiments.metrics import judge as judge_mod
from longctx.experiments.metrics import loong as m
from longctx.retrieval import Corpus, Document
from longctx.retrieval.contract import Question

# 2: 128,000-token input budget (run.sh at HEAD), generation at temperature 0.0,
# failed generations judged as ""
VERSION = 2
#: ``src/run.sh`` at HEAD (7ad6cc8): ``MAX_LENGTH="128000"`` tokens per prompt (the first
#: release said 120000, then 300000); ``step1_load_data.py`` packs documents under it.
MAX_LENGTH = 128_000
#: Every ``config/models/*.yaml`` runs generation at ``temperature: 0.0`` (README: "We set
#: temperature = 0").
TEMPERATURE = 0.0
SEED = 1000000007
DOMAINS = ("financial", "paper", "legal")
LEVELS = {1: "Spotlight Locating", 2: "Comparison", 3: "Clustering", 4: "Chain of Reasoning"}
SETS = {1: "10K-50K", 2: "50K-100K", 3: "100K-200K", 4: "200K-250K"}
_LEGAL_MATCHING = "阅读以上判决文书，我将给你若干份判决结果："


def _financial(folder: Path, name: str, level: int, fix_titles: bool) -> tuple[str, str]:
    if Path(name).name != name or name in (
        "",
        ".",
        "..",
    ):  # a name, never a path: glob must stay in folder
        raise BenchmarkDataError(
            f"Loong: financial document name {name!r} is a path, outside the data root {folder}."
        )
    pattern = f"*2024-{name}*.txt" if str(level).strip() != "4" else f"*{name}*.txt"
    # The official code takes glob(...)[0] in filesystem order; we sort so
    # the choice is reproducible.
    matches = [
        resolve_inside(folder, p.relative_to(folder), what="Loong")
        for p in sorted(folder.glob(pattern))
    ]
    if not matches:
        raise BenchmarkDataError(f"Loong: no financial report matching {folder / pattern}.")
    # Quirk: the official title is the file stem's last '-' part, which for the 2024 reports
    # ("2024-<Company>-j.txt") is just "j" or "n"; fix_titles uses the item's document name.
    title = name if fix_titles else matches[0].stem.split("-")[-1]
    return f"《{title}》\n", matches[0].read_text(encoding="utf-8")


def _document(
    root: Path, item: dict[str, Any], name: str, idx: int, legal: dict | None, fix_titles: bool
) -> tuple[str, str, str]:
    """(header, title, text) of one document, exactly as the official prompt shows it."""
    doc_type = item["type"]
    if doc_type == "financial":
        header, text = _financial(root / "doc" / "financial", name, item["level"], fix_titles)
        return header, header[1:-2], text
    if doc_type == "paper":
        path = resolve_inside(root / "doc" / "paper", name, what="Loong")
        if not path.is_file():
            raise BenchmarkDataError(f"Loong: paper {path} not found.")
        text = path.read_text(encoding="utf-8")
        title = text.split("\n", 1)[0].strip("#").strip()
        return f"{title}\n", title, text
    if doc_type == "legal":
        if legal is None:
            raise BenchmarkDataError("Loong: a legal item, but legal.json was not loaded.")
        record = legal[name]
        matching = item["level"] == 4 and _LEGAL_MATCHING in item["instruction"]
        text = record["content"] if matching else record["content"] + record["result"]
        return f"《判决文书{idx + 1}》\n", f"判决文书{idx + 1}", text
    raise ValueError(
        f"Loong item {item.get('id')!r}: type must be one of {DOMAINS}, got {doc_type!r}"
    )


def _sample(
    root: Path,
    item: dict[str, Any],
    rng: random.Random,
    shuffle: bool,
    legal: dict | None,
    fix_titles: bool,
) -> Sample:
    docs = [_document(root, item, name, i, legal, fix_titles) for i, name in enumerate(item["doc"])]
    if shuffle and item.get("shuffle_doc", True):
        if item["type"] == "financial":
            rng.shuffle(
                docs
            )  # the official code shuffles financial contents once before packing...
        rng.shuffle(docs)  # ...and every item's packed list once more
    sample_id = str(item["id"])
    documents = [
        Document(doc_id=f"{sample_id}-{i}", text=text, title=title, metadata={"header": header})
        for i, (header, title, text) in enumerate(docs)
    ]
    return Sample(
        sample_id=sample_id,
        benchmark="loong",
        dataset=item["type"],
        corpus=Corpus(documents),
        question=Question(
            text=item["question"],
            instruction=item["instruction"],
            metadata={"sample_id": sample_id},
        ),
        answers=(item["answer"] if isinstance(item["answer"], str) else str(item["answer"]),),
        metadata={
            "type": item["type"],
            "level": item["level"],
            "set": item["set"],
            "task": LEVELS.get(item["level"]),
            "prompt_template": item["prompt_template"],
            "instruction": item["instruction"],
            "doc_names": list(item["doc"]),
            "titles": "fixed (document names)" if fix_titles else "official",
            "answer_raw": item[
                "answer"
            ],  # the JSON answer as given (dict/list/str), for the official export
        },
    )


def load(
    path: str | Path | None = None,
    *,
    datasets: Sequence[str] | None = None,
    seed: int | None = SEED,
    shuffle: bool = True,
    fix_titles: bool = False,
) -> list[Sample]:
    """Loong samples from ``<path or $LONGCTX_DATA_DIR/loong>/loong.jsonl`` and ``doc/``.

    Args:
        path: Folder holding ``loong.jsonl`` and ``doc/``.
        datasets: Domains to keep (``financial``, ``paper``, ``legal``); filtered before
            shuffling, as the official ``--domain`` flag does.
        seed: Seed of the document-order RNG (official 1000000007).
        shuffle: Shuffle document order (items with ``shuffle_doc: false`` never are).
        fix_titles: Title 2024 financial reports by company name instead of the official
            ``《j》``/``《n》`` that the file-name parsing yields (labelled in
            ``metadata["titles"]``).
    """
    root = data_root("loong", path)
    items = load_records(root, "loong", hub=None, what="Loong")
    keep = set(datasets) if datasets is not None else set(DOMAINS)
    legal = None
    if any(i["type"] == "legal" for i in items if i["type"] in keep):
        legal_path = root / "doc" / "legal" / "legal.json"
        if not legal_path.is_file():
            raise BenchmarkDataError(f"Loong: legal items need {legal_path}.")
        legal = json.loads(legal_path.read_text(encoding="utf-8"))
    rng = random.Random(seed)
    return [
        _sample(root, item, rng, shuffle, legal, fix_titles)
        for item in items
        if item["type"] in keep
    ]


def docs_string(sample: Sample) -> str:
    """The official ``{docs}`` string: each document as header + text + blank line, in
    corpus order."""
    return "".join(f"{d.metadata['header']}{d.text}\n\n" for d in sample.corpus)


def prompt(sample: Sample, context: str | None = None) -> str:
    """The official generation prompt: question and instruction first, then ``{docs}``
    (``context`` in place of the documents when given).

    The official ``--max_length`` document skipping is not applied here; the
    full-context baseline's middle truncation handles over-long prompts.
    """
    md = sample.metadata
    text = (
        md["prompt_template"]
        .replace("{question}", sample.question.text)
        .replace("{instruction}", md["instruction"])
    )
    return text.replace("{docs}", docs_string(sample) if context is None else context)


def protocol(sample: Sample) -> dict[str, Any]:
    """``run.sh``: ``--max_length 128000`` of input, temperature 0.0; no answer budget is set (the
    model's default)."""
    return {"max_input_tokens": MAX_LENGTH, "temperature": TEMPERATURE}


def _bucket_stats(ratings: dict[str, list[float | None]], total: int) -> dict[str, dict]:
    out = {}
    for key, values in ratings.items():
        stats = m.loong_stats(values).__dict__
        stats["parse_success_rate_official"] = (
            round(stats["n_effective"] / total, 4) if total else None
        )
        out[key] = stats
    return out


@BENCHMARKS.register("loong", version=VERSION, load=load, prompt=prompt, protocol=protocol)
def score(pairs: Sequence[tuple[Sample, Any]], *, judge: Any = None, **_: Any) -> dict:
    """Judge every prediction and aggregate as ``step4_cal_metric.py`` does.

    Args:
        pairs: ``(Sample, Prediction)`` pairs. A failed call is judged as the empty
            answer ``""``, as the official loop writes and judges it (``generate.py``:
            ``response_content or ""``), so it counts as a rated wrong answer; ``n_failed``
            says how many there were.
        judge: A LangChain chat model (GPT-4 officially), called at the official
            ``temperature=0.0`` (:data:`~experiments.metrics.judge.LOONG_JUDGE`). Required.

    Returns:
        Overall stats plus ``by_set_level`` (``"set1_level2"``), ``by_set``, ``by_level``,
        ``by_domain``; each with avg score, perfect rate and parse-success rates.
    """
    if judge is None:
        raise ValueError(
            "Loong is scored by an LLM judge: pass judge=<LangChain chat model> (GPT-4 officially)."
        )
    groups: dict[str, list[float | None]] = {"overall": []}
    per_sample: dict[str, float | None] = {}
    errors = 0
    for sample, pred in pairs:
        md = sample.metadata
        question = m.judge_question(
            md["prompt_template"], sample.question.text, md["instruction"], md["type"]
        )
        prediction = (
            "" if pred.failed else pred.text_or_empty
        )  # official: a failed generation is judged as ""
        reply = judge_mod.call_judge(
            judge,
            m.judge_prompt(question, sample.answers[0], prediction),
            params=judge_mod.LOONG_JUDGE,
        )
        errors += reply.error is not None
        rating = m.parse_rating(reply.text)
        per_sample[sample.sample_id] = rating
        for key in (
            "overall",
            f"set{md_get(sample, 'set')}_level{md_get(sample, 'level')}",
            f"set{md_get(sample, 'set')}",
            f"level{md_get(sample, 'level')}",
            sample.dataset,
        ):
            groups.setdefault(key, []).append(rating)
    stats = _bucket_stats(groups, len(pairs))
    overall = stats.pop("overall")
    return overall | {
        "by_set_level": {k: v for k, v in stats.items() if "_level" in k},
        "by_set": {k: v for k, v in stats.items() if k.startswith("set") and "_level" not in k},
        "by_level": {k: v for k, v in stats.items() if k.startswith("level")},
        "by_domain": {k: v for k, v in stats.items() if k in DOMAINS},
        "n_failed": sum(1 for _, p in pairs if p.failed),
        "n_judge_errors": errors,
        "per_sample": per_sample,
    }


def md_get(sample: Sample, key: str) -> Any:
    """A metadata field of a Loong sample (set or level)."""
    return sample.metadata.get(key)
