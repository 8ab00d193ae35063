"""Reports of a run folder: official scores, accuracy by context length, cost, and plots.

``longctx report DIR`` writes into ``DIR/report/``: ``summary.md`` / ``summary.csv``
(one row per strategy: official headline score, failures, mean calls, tokens and
seconds per answer), ``by_length.md`` / ``by_length.csv`` (mean per-sample score by
corpus-length bucket), ``scores.json`` (every strategy's full official aggregation),
``ceilings.md`` / ``ceilings.json`` and a ``ceiling`` summary column when the samples name
their evidence (upper bounds, see ``experiments.ceilings``), ``report.html`` (everything in
one self-contained page, with winners, estimated cost and a per-question drill-down, see
``experiments.html_report``), and
two PNG plots: accuracy vs context length (when the run spans two length buckets or more),
and accuracy vs tokens spent.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.benchmarks import score
from experiments.ceilings import report_ceilings
from experiments.html_report import write_html_report
from experiments.prices import load_prices, parse_prices
from experiments.runner import MANIFEST_FILE, latest_rows, read_rows, run_samples
from experiments.synth import retrieval_recall
from retrieval.redaction import redact_value

#: Corpus-length buckets (tokens) for accuracy-vs-length; CorpusQA's tiers fall one per bucket.
LENGTH_BUCKETS = ((0, 32_000, "<32K"), (32_000, 160_000, "32K-160K"), (160_000, 1_500_000, "160K-1.5M"),
                  (1_500_000, 6_000_000, "1.5M-6M"), (6_000_000, 10**12, "6M+"))  # fmt: skip
#: The aggregate key that headlines each benchmark (Loong reports its judge's average score).
HEADLINE = {"loong": "avg_score"}


def length_bucket(tokens: int) -> str:
    """The bucket label of a corpus length."""
    return next(label for lo, hi, label in LENGTH_BUCKETS if lo <= tokens < hi)


def headline(benchmark: str, scores: dict[str, Any]) -> float | None:
    """The one number that summarizes a benchmark's official aggregation."""
    value = scores.get(HEADLINE.get(benchmark, "overall"))
    return float(value) if isinstance(value, (int, float)) else None


def build_report(
    out: str | Path,
    *,
    samples: Sequence[Any] | None = None,
    judge: Any = None,
    plots: bool = True,
    html: bool = True,
    prices: str | Path | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Score every strategy of the run in ``out`` and write tables and plots to ``out/report``.

    Args:
        out: A folder written by :func:`experiments.runner.run_experiment`.
        samples: The run's samples (default: reloaded as the manifest describes).
        judge: A chat model for LLM-judged benchmarks (Loong; CorpusQA, which otherwise
            uses the deterministic equivalence checker).
        plots: Write the PNG plots.
        html: Write ``report.html`` (``experiments.html_report``): tables, plots, winners,
            estimated cost and a per-question drill-down in one self-contained file.
        prices: USD per 1M prompt/completion tokens per model id for the cost estimate: a JSON
            file or a mapping (``experiments.prices``); built-in estimates otherwise.
    """
    out = Path(out)
    price_table = _price_table(prices)  # a bad file fails before any scoring
    manifest = redact_value(json.loads((out / MANIFEST_FILE).read_text()))  # a folder written before redaction too
    cfg = manifest["config"]
    benchmark = cfg["benchmark"]
    samples = list(samples) if samples is not None else run_samples(cfg)
    by_id = {s.sample_id: s for s in samples}
    rows = [r for r in latest_rows(redact_value(read_rows(out))).values() if r["sample_id"] in by_id]
    options = {"judge": judge} if judge is not None else {}
    per_strategy: dict[str, dict[str, Any]] = {}
    for name in cfg["strategies"]:
        mine = [r for r in rows if r["strategy"] == name]
        if not mine:
            continue
        preds = [(by_id[r["sample_id"]], r.get("prediction"), r.get("error")) for r in mine]
        official = score(benchmark, preds, **options)  # each prediction scored (and judged) once
        per_sample = [(r, official["per_sample"].get(r["sample_id"])) for r in mine]
        per_strategy[name] = {"official": official, "rows": mine, "per_sample": per_sample}
    report = out / "report"
    report.mkdir(exist_ok=True)
    summary = [_summary_row(benchmark, name, d, by_id) for name, d in per_strategy.items()]
    _add_ceilings(cfg, samples, summary, report)
    by_length = _by_length(per_strategy)
    _write_table(report / "summary", summary)
    _write_table(report / "by_length", by_length)
    (report / "scores.json").write_text(json.dumps({n: d["official"] for n, d in per_strategy.items()}, indent=2, default=str))
    if plots and summary:
        from experiments.plots import plot_accuracy_vs_length, plot_accuracy_vs_tokens

        for plot, data, name in ((plot_accuracy_vs_length, by_length, "accuracy_vs_length.png"),
                                 (plot_accuracy_vs_tokens, summary, "accuracy_vs_tokens.png")):  # fmt: skip
            if not plot(data, report / name, title=benchmark):  # nothing to show (one length bucket): no stale plot either
                (report / name).unlink(missing_ok=True)
    result = {"benchmark": benchmark, "summary": summary, "by_length": by_length, "folder": str(report)}
    if html:
        result["html"] = str(write_html_report(report, benchmark=benchmark, manifest=manifest, summary=summary, by_length=by_length,
                                               per_strategy=per_strategy, samples=by_id, prices=price_table))  # fmt: skip
    return result


def _price_table(prices: str | Path | dict[str, Any] | None) -> dict[str, tuple[float, float]] | None:
    if prices is None:
        return None
    return parse_prices(prices) if isinstance(prices, dict) else load_prices(prices)


def _add_ceilings(cfg: dict[str, Any], samples: list[Any], summary: list[dict[str, Any]], report: Path) -> None:
    """Evidence ceilings beside accuracy when the samples name their evidence (``experiments.ceilings``)."""
    try:
        report_ceilings(cfg, samples, summary, report)
    except (ValueError, TypeError, KeyError, OSError, RuntimeError) as exc:  # a bonus column: never lose the report over it
        import logging

        logging.getLogger(__name__).warning("Evidence ceilings skipped: %s", exc)


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 2) if values else None


def _summary_row(benchmark: str, name: str, data: dict[str, Any], by_id: dict[str, Any]) -> dict[str, Any]:
    ok = [r for r in data["rows"] if r["status"] == "ok"]
    usage = [r["usage"] for r in ok]
    row = {
        "strategy": name,
        "score": headline(benchmark, data["official"]),
        "answers": len(data["rows"]),
        "failed": len(data["rows"]) - len(ok),
        "llm_calls": _mean([u["llm_calls"] for u in usage]),
        "prompt_tokens": _mean([u["prompt_tokens"] for u in usage]),
        "completion_tokens": _mean([u["completion_tokens"] for u in usage]),
        "seconds": _mean([r["seconds"] for r in ok]),
        "cached_calls": sum(u.get("cached_calls", 0) for u in usage),
    }
    recalls = [_recall(by_id[r["sample_id"]], r) for r in ok]
    if any(v is not None for v in recalls):  # generated corpora know their evidence documents
        row["evidence_recall"] = _mean([v for v in recalls if v is not None])
    return row


def _recall(sample: Any, row: dict[str, Any]) -> float | None:
    """Share of the sample's evidence documents among the documents the answer cited."""
    evidence = sample.metadata.get("evidence_doc_ids")
    if not evidence or not row.get("evidence_doc_ids"):
        return None
    return retrieval_recall(list(evidence), row["evidence_doc_ids"])


def _by_length(per_strategy: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    table: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for name, data in per_strategy.items():
        for row, value in data["per_sample"]:
            if value is not None:
                table[length_bucket(row["corpus_tokens"])][name].append(value)
    order = [label for _, _, label in LENGTH_BUCKETS if label in table]
    return [{"length": label, **{n: _mean(table[label].get(n, [])) for n in per_strategy}} for label in order]


def _write_table(stem: Path, rows: list[dict[str, Any]]) -> None:
    """``stem.csv`` and ``stem.md`` with the same rows."""
    if not rows:
        stem.with_suffix(".md").write_text("(no rows)\n")
        return
    columns = list(dict.fromkeys(key for row in rows for key in row))  # union, first-seen order
    rows = [{c: row.get(c) for c in columns} for row in rows]
    with open(stem.with_suffix(".csv"), "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join("" if r[c] is None else str(r[c]) for c in columns) + " |" for r in rows]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")


def markdown_table(path: Path) -> str:
    """The Markdown text of a written table (for printing)."""
    return path.with_suffix(".md").read_text()
