"""Reports of a run folder: official scores, accuracy by context length, cost, and plots.

``longctx report DIR`` writes into ``DIR/report/``: ``summary.md`` / ``summary.csv`` (one row per
strategy: official headline score with its 95% bootstrap interval, standard error and n, failures,
mean calls, tokens and seconds per answer, and whether it sits on the cost-accuracy frontier; for
LongBench v2 and CorpusQA also ``score_official_denominator``, the headline with failed calls left
out of the denominator as their official scripts do; see ``longctx.experiments.reports.summary``),
``pairwise.csv`` (every pair of strategies: paired difference, interval, Holm-adjusted p) and
``significance.md`` (the winner per metric where the paired tests support one, else why none is
named; see ``longctx.experiments.reports.comparison`` and docs/statistics.md), ``by_length.md`` /
``by_length.csv`` (mean per-sample score by corpus-length bucket), ``by_task_length.md`` (BABILong:
accuracy x 100 per task x length, the official tables' layout), ``scores.json`` (every strategy's
full official aggregation), ``ceilings.md`` / ``ceilings.json`` and a ``ceiling`` summary column
when the samples name their evidence (upper bounds, see ``longctx.experiments.ceilings.measure``),
``amortized_cost.md`` / ``.csv`` (a question's cost as the questions over one corpus accumulate,
index cost shared out, and where each pair of strategies breaks even, see
``longctx.experiments.planning.amortized_costs``), ``per_context.md`` / ``.csv`` (cost per context
and per question when some context was asked several questions, a legend line per column),
``report.html`` (everything in one self-contained page, with winners, estimated cost and a
per-question drill-down, see ``longctx.experiments.reports.html_report``), and the PNG plots:
accuracy vs context length (when the run spans two length buckets or more), accuracy vs tokens
spent, accuracy vs estimated USD per answer (when some model has a price), and cost per question vs
questions asked over one corpus.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longctx.agents.jsonsafe import dumps
from longctx.experiments.benchmarks import score
from longctx.experiments.benchmarks.predictions import row_prediction
from longctx.experiments.ceilings.measure import report_ceilings
from longctx.experiments.planning.amortized_costs import amortization, write_amortized
from longctx.experiments.planning.context_costs import legend as context_legend
from longctx.experiments.planning.context_costs import per_context_table
from longctx.experiments.planning.run_prices import report_prices
from longctx.experiments.planning.spend import latest_with_spend
from longctx.experiments.reports import comparison, pairing, stats
from longctx.experiments.reports.html_report import (
    pick_winners,
    significance_text,
    strategy_costs,
    summary_table,
    write_html_report,
)
from longctx.experiments.reports.summary import (
    add_frontiers,
    add_intervals,
    add_rerank_costs,
    add_uncached_costs,
    per_question_values,
    rounded_mean,
    summary_row,
)
from longctx.experiments.reports.task_length_table import FILE as TASK_LENGTH_FILE
from longctx.experiments.reports.task_length_table import task_length_markdown
from longctx.experiments.runner import (
    RunFolderError,
    manifest_config,
    read_manifest,
    read_rows,
    run_samples,
)
from longctx.retrieval.redaction import redact_value

#: Corpus-length buckets (tokens) for accuracy-vs-length; CorpusQA's tiers fall one per bucket.
LENGTH_BUCKETS = (
    (0, 32_000, "<32K"),
    (32_000, 160_000, "32K-160K"),
    (160_000, 1_500_000, "160K-1.5M"),
    (1_500_000, 6_000_000, "1.5M-6M"),
    (6_000_000, 10**12, "6M+"),
)


def length_bucket(tokens: int) -> str:
    """The bucket label of a corpus length."""
    return next(label for lo, hi, label in LENGTH_BUCKETS if lo <= tokens < hi)


def build_report(
    out: str | Path,
    *,
    samples: Sequence[Any] | None = None,
    judge: Any = None,
    judge_setting: str | None = None,
    plots: bool = True,
    html: bool = True,
    prices: str | Path | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Score every strategy of the run in ``out`` and write tables and plots to ``out/report``.

    Args:
        out: A folder written by :func:`longctx.experiments.runner.run_experiment`.
        samples: The run's samples (default: reloaded as the manifest describes).
        judge: A chat model for LLM-judged benchmarks (Loong; CorpusQA, which otherwise
            uses the deterministic equivalence checker).
        judge_setting: Which official judge of a benchmark with two (BrowseComp-Plus:
            ``evaluate_run``, the default, or ``evaluate_with_openai``).
        plots: Write the PNG plots.
        html: Write ``report.html`` (``longctx.experiments.reports.html_report``): tables, plots,
            winners, estimated cost and a per-question drill-down in one self-contained file.
        prices: USD per 1M prompt/completion tokens per model id for the cost estimate: a JSON
            file or a mapping (``longctx.experiments.planning.prices``); otherwise the table the run
            was given (``longctx.experiments.planning.run_prices``), else built-in estimates.
            ``result["prices"]`` says which.
    """
    out = Path(out)
    if not out.is_dir():
        raise RunFolderError(f"{out} is not a folder: give a folder written by 'longctx run'")
    price_table, price_source = report_prices(out, prices)  # a bad file fails before any scoring
    manifest, samples, per_strategy = score_run(
        out, samples=samples, judge=judge, judge_setting=judge_setting
    )
    cfg = manifest["config"]
    benchmark = cfg["benchmark"]
    by_id = {s.sample_id: s for s in samples}
    report = out / "report"
    report.mkdir(exist_ok=True)
    summary = [summary_row(benchmark, name, d, by_id) for name, d in per_strategy.items()]
    _add_ceilings(cfg, samples, summary, report)
    costs = strategy_costs(
        per_strategy, manifest, price_table
    )  # each row priced once, for every table, test and page below
    add_rerank_costs(summary, costs)
    per_question = per_question_values(per_strategy, by_id, manifest, costs)
    add_intervals(benchmark, samples, summary, per_question["score"])
    table = summary_table(summary, costs)
    add_frontiers(summary, table)
    add_uncached_costs(summary, table, costs)
    pairs = comparison.pairwise(per_question["score"])
    comparison.write_pairwise(report / "pairwise.csv", pairs)
    missing = {r["strategy"]: r["missing"] for r in summary if r["missing"]}
    winners = [] if missing else pick_winners(table, per_question)
    (report / "significance.md").write_text(
        significance_text(winners, missing=missing, questions=len(samples)), encoding="utf-8"
    )
    by_length = _by_length(per_strategy)
    _write_table(report / "summary", summary)
    _write_table(report / "by_length", by_length)
    per_context = per_context_table(
        per_strategy
    )  # many questions over one context: its cost apart from each question's
    if per_context:
        _write_table(report / "per_context", per_context, legend=context_legend(per_context[0]))
    amortized = amortization(
        per_strategy, costs
    )  # a question's cost as questions over one corpus accumulate, and the break-evens
    if amortized is not None:
        write_amortized(report / "amortized_cost", amortized)
    (report / "scores.json").write_text(
        dumps(
            {n: d["official"] for n, d in per_strategy.items()},
            indent=2,
            max_chars=None,
            max_total=None,
        )
    )
    tables = task_length_markdown(benchmark, {n: d["official"] for n, d in per_strategy.items()})
    if tables is not None:  # BABILong's official layout: tasks x lengths
        (report / TASK_LENGTH_FILE).write_text(tables, encoding="utf-8")
    if plots and summary:
        from longctx.experiments.reports.plots import (
            plot_accuracy_vs_length,
            plot_accuracy_vs_tokens,
            plot_accuracy_vs_usd,
            plot_cost_per_question,
        )

        drawn = (
            (plot_accuracy_vs_length, by_length, "accuracy_vs_length.png"),
            (plot_accuracy_vs_tokens, summary, "accuracy_vs_tokens.png"),
            (plot_accuracy_vs_usd, summary_table(summary, costs), "accuracy_vs_usd.png"),
        )  # USD: the table's costs, with the frontiers added to the summary since
        for plot, data, name in drawn:
            if not plot(
                data, report / name, title=benchmark
            ):  # nothing to show (one length bucket): no stale plot either
                (report / name).unlink(missing_ok=True)
        if amortized is None or not plot_cost_per_question(
            amortized, report / "cost_per_question.png", title=benchmark
        ):
            (report / "cost_per_question.png").unlink(missing_ok=True)
    result = {
        "benchmark": benchmark,
        "summary": summary,
        "by_length": by_length,
        "folder": str(report),
        "pairwise": pairs,
        "winners": winners,
        "missing": missing,
        "per_context": per_context,
        "amortized": amortized,
        "prices": price_source,
    }
    if html:
        result["html"] = str(
            write_html_report(
                report,
                benchmark=benchmark,
                manifest=manifest,
                summary=summary,
                by_length=by_length,
                per_strategy=per_strategy,
                samples=by_id,
                prices=price_table,
                winners=winners,
                pairwise=pairs,
                missing=missing,
                costs=costs,
            )
        )
    return result


#: Benchmarks whose scorer has more than one official judge: the ``judge_setting`` names.
JUDGE_SETTINGS = {"browsecomp_plus": ("evaluate_run", "evaluate_with_openai")}


def score_run(
    out: str | Path,
    *,
    samples: Sequence[Any] | None = None,
    judge: Any = None,
    judge_setting: str | None = None,
) -> tuple[dict[str, Any], list[Any], dict[str, dict[str, Any]]]:
    """(manifest, samples, per strategy ``{"official", "rows", "per_sample": [(row, score)]}``) of a
    run folder, each prediction scored (and judged) once by the benchmark's scorer
    (``judge_setting``: which of its official judges, where it has several)."""
    out = Path(out)
    if not out.is_dir():
        raise RunFolderError(f"{out} is not a folder: give a folder written by 'longctx run'")
    manifest = redact_value(read_manifest(out))  # a folder written before redaction too
    cfg = manifest_config(out, manifest)
    samples = list(samples) if samples is not None else run_samples(cfg)
    by_id = {s.sample_id: s for s in samples}
    rows = [
        r
        for r in latest_with_spend(redact_value(read_rows(out))).values()
        if r["sample_id"] in by_id
    ]  # a resumed answer: all its calls, once
    options: dict[str, Any] = {"judge": judge} if judge is not None else {}
    if judge_setting is not None:
        known = JUDGE_SETTINGS.get(cfg["benchmark"], ())
        if judge_setting not in known:
            raise ValueError(
                f"judge setting {judge_setting!r} for {cfg['benchmark']}: known "
                + (", ".join(known) or "none (it has one judge)")
            )
        options["judge_setting"] = judge_setting
    per_strategy: dict[str, dict[str, Any]] = {}
    for name in cfg["strategies"]:
        mine = [r for r in rows if r["strategy"] == name]
        if not mine:  # a strategy of the run with no answer yet: shown as missing, never dropped
            per_strategy[name] = {"official": {"per_sample": {}}, "rows": [], "per_sample": []}
            continue
        official = score(
            cfg["benchmark"], [row_prediction(r) for r in mine], samples=samples, **options
        )
        rules = (
            official.get("match_rule") or {}
        )  # which rule credited each answer, where the scorer says (own corpus)
        per_sample = [
            (
                {**r, "match_rule": rules[r["sample_id"]]} if r["sample_id"] in rules else r,
                official["per_sample"].get(r["sample_id"]),
            )
            for r in mine
        ]
        per_strategy[name] = {"official": official, "rows": mine, "per_sample": per_sample}
    return manifest, samples, per_strategy


@dataclass(frozen=True)
class RunComparison:
    """What ``longctx compare`` shows: the paired rows, and per pair of runs the questions left
    unpaired and why."""

    pairs: list[dict[str, Any]]
    dropped: list[str]


def compare_runs(folders: Sequence[str | Path], *, judge: Any = None) -> RunComparison:
    """Paired comparison of the same strategies across run folders (two models, two configs).

    Strategies named in several runs are compared run against run (``rag @ runA`` vs
    ``rag @ runB``); when the runs share no strategy name, every strategy of one run meets every
    strategy of the others. A question is paired only when its id, text and corpus fingerprint match
    in both runs (``longctx.experiments.reports.pairing``; ``dropped`` says how many were not, and
    why); p-values are Holm-adjusted across all the pairs shown.

    Raises:
        ValueError: Fewer than two folders, or runs of different benchmarks.
    """
    if len(folders) < 2:
        raise ValueError("compare needs two run folders or more")
    runs = []
    for folder in folders:
        manifest, samples, per_strategy = score_run(folder, judge=judge)
        runs.append(
            (
                Path(folder).name or str(folder),
                manifest["config"]["benchmark"],
                per_strategy,
                pairing.identities(samples),
            )
        )
    benchmarks = {b for _, b, _, _ in runs}
    if len(benchmarks) > 1:
        raise ValueError(f"compare needs runs of one benchmark; these are {sorted(benchmarks)}")
    labels = [name for name, _, _, _ in runs]
    if len(set(labels)) < len(labels):
        labels = [str(Path(f)) for f in folders]
    scores = {
        f"{s} @ {label}": {pairing.key(r["sample_id"], ids): v for r, v in d["per_sample"]}
        for label, (_, _, per, ids) in zip(labels, runs)
        for s, d in per.items()
    }
    names = [set(per) for _, _, per, _ in runs]
    shared = set.intersection(*names) if names else set()

    def wanted(a: str, b: str) -> bool:
        (sa, ra), (sb, rb) = a.split(" @ ", 1), b.split(" @ ", 1)
        return ra != rb and (sa == sb if shared else True)

    pairs = [r for r in comparison.pairwise(scores) if wanted(r["strategy_a"], r["strategy_b"])]
    for row, p in zip(pairs, stats.holm([r["p_value"] for r in pairs])):
        row["p_adjusted"] = p  # the family is the pairs shown
    dropped = [
        line
        for i, (la, ra) in enumerate(zip(labels, runs))
        for lb, rb in zip(labels[i + 1 :], runs[i + 1 :])
        if (line := pairing.dropped_line(la, lb, ra[3], rb[3]))
    ]
    return RunComparison(pairs, dropped)


def _add_ceilings(
    cfg: dict[str, Any], samples: list[Any], summary: list[dict[str, Any]], report: Path
) -> None:
    """Evidence ceilings beside accuracy when the samples name their evidence
    (``longctx.experiments.ceilings.measure``)."""
    try:
        report_ceilings(cfg, samples, summary, report)
    except (
        ValueError,
        TypeError,
        KeyError,
        OSError,
        RuntimeError,
    ) as exc:  # a bonus column: never lose the report over it
        import logging

        logging.getLogger(__name__).warning("Evidence ceilings skipped: %s", exc)


def _by_length(per_strategy: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    table: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for name, data in per_strategy.items():
        for row, value in data["per_sample"]:
            if value is not None:
                table[length_bucket(row["corpus_tokens"])][name].append(value)
    order = [label for _, _, label in LENGTH_BUCKETS if label in table]
    return [
        {"length": label, **{n: rounded_mean(table[label].get(n, [])) for n in per_strategy}}
        for label in order
    ]


def _write_table(stem: Path, rows: list[dict[str, Any]], legend: Sequence[str] = ()) -> None:
    """``stem.csv`` and ``stem.md`` with the same rows (``legend``: lines after the
    Markdown table)."""
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
    lines += [
        "| " + " | ".join("" if r[c] is None else str(r[c]) for c in columns) + " |" for r in rows
    ]
    lines += ["", *legend] if legend else []
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
