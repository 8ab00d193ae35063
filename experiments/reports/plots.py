"""PNG plots of a run's report (matplotlib, headless Agg backend).

Every plot gives a strategy the same colour (:func:`strategy_color`: the one its registry entry
declares), keeps its legend outside the data, and places point labels so that they do not overlap
(:func:`place_labels`). Accuracy vs context length is drawn only when the run spans at least two
length buckets: one bucket is no trend. Cost per question against the questions asked over one
corpus shows where an index built once pays off (:func:`plot_cost_per_question`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longctx.experiments.planning.amortized_costs import Amortization
from longctx.graphs.plugin.presentation import palette_color
from longctx.graphs.plugin.registry import STRATEGIES
from longctx.graphs.plugin.strategy_registry import VARIANT_SEPARATOR
from longctx.retrieval.extras import require

#: Strategies beside each other in a length bucket are spread over this share of the bucket's width.
DODGE = 0.3


def strategy_color(name: str) -> str:
    """The colour of a strategy in every plot and in ``report.html``: the one its registry entry
    declares (``presentation.color``), else one fixed by its name (also for a strategy that a
    run recorded but this process has not registered), so runs and plots agree. A variant
    (``rag@hybrid``) gets one fixed by its whole name: two variants of a strategy differ."""
    variant = VARIANT_SEPARATOR in name
    declared = (
        STRATEGIES.get(name).presentation.color if name in STRATEGIES and not variant else None
    )
    return declared or palette_color(name)


def _pyplot():
    require("matplotlib", extra="plots", feature="plotting the report (--no-plots skips it)")
    import matplotlib

    matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt

    return plt


def plot_accuracy_vs_length(
    by_length: list[dict[str, Any]], path: Path, *, title: str = ""
) -> bool:
    """One line per strategy: mean per-sample score in each corpus-length bucket.

    Returns False, writing nothing, when the run spans fewer than two buckets.
    """
    if len(by_length) < 2:
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    labels = [row["length"] for row in by_length]
    strategies = list(dict.fromkeys(k for row in by_length for k in row if k != "length"))
    for k, name in enumerate(strategies):
        # strategies side by side within a bucket, so equal scores stay visible
        offset = (k - (len(strategies) - 1) / 2) * (DODGE / max(len(strategies) - 1, 1))
        points = [
            (i + offset, row[name]) for i, row in enumerate(by_length) if row.get(name) is not None
        ]
        if points:
            ax.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                marker="o",
                label=name,
                color=strategy_color(name),
            )
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlim(-0.5, len(labels) - 0.5)
    _legend_outside(ax)
    _finish(
        plt,
        fig,
        ax,
        path,
        xlabel="corpus length (tokens)",
        title=f"{title}: accuracy vs context length",
    )
    return True


def plot_accuracy_vs_tokens(summary: list[dict[str, Any]], path: Path, *, title: str = "") -> bool:
    """One point per strategy: official score against mean tokens spent per answer (log x), with the
    score's 95% interval as an error bar and the (score, tokens) Pareto frontier as a dashed line.

    Returns False, writing nothing, when no strategy has both a score and tokens.
    """
    points = [
        (row, (row.get("prompt_tokens") or 0) + (row.get("completion_tokens") or 0))
        for row in summary
    ]
    return _score_against(
        points,
        "frontier_tokens",
        path,
        xlabel="tokens per answer (prompt + completion)",
        title=f"{title}: accuracy vs tokens spent",
        unit="tokens",
    )


def plot_accuracy_vs_usd(table: list[dict[str, Any]], path: Path, *, title: str = "") -> bool:
    """One point per strategy: official score against estimated USD per answer (log x; ``table``:
    the summary with ``cost_usd``, :func:`longctx.experiments.reports.html_report.summary_table`),
    with the score's interval and the (score, USD) frontier. A strategy without a price or at no
    cost (a local model) is left out.

    Returns False, writing nothing, when no strategy has both a score and a cost above zero.
    """
    points = [(row, row.get("cost_usd") or 0.0) for row in table]
    return _score_against(
        points,
        "frontier_cost",
        path,
        xlabel="estimated USD per answer",
        title=f"{title}: accuracy vs estimated cost",
        unit="USD",
    )


def _score_against(
    pairs: list[tuple[dict[str, Any], float]],
    frontier: str,
    path: Path,
    *,
    xlabel: str,
    title: str,
    unit: str,
) -> bool:
    """The scatter of :func:`plot_accuracy_vs_tokens` over ``(summary row, x)`` pairs
    (``x`` > 0 only)."""
    points, rows = [], {}
    for row, x in pairs:
        if row.get("score") is not None and x > 0:
            points.append((row["strategy"], x, row["score"]))
            rows[row["strategy"]] = row
    if not points:
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, x, value in points:
        low, high = rows[name].get("score_ci_low"), rows[name].get("score_ci_high")
        if (
            low is not None and high is not None
        ):  # the score's 95% interval (experiments.reports.stats)
            ax.errorbar(
                x,
                value,
                yerr=[[max(0.0, value - low)], [max(0.0, high - value)]],
                color=strategy_color(name),
                capsize=3,
                linewidth=1,
                zorder=2,
            )
        ax.scatter(
            x,
            value,
            s=60,
            color=strategy_color(name),
            label=name,
            zorder=3,
            edgecolors="white",
            linewidths=0.8,
        )
    front = sorted((x, v) for n, x, v in points if rows[n].get(frontier) == "frontier")
    if len(front) > 1:  # the cost-accuracy frontier: no other strategy scores higher for less
        ax.plot(
            [x for x, _ in front],
            [v for _, v in front],
            linestyle="--",
            color="#888",
            linewidth=1,
            zorder=1,
            label="frontier",
        )
    _log_token_axis(ax)
    if unit == "USD":
        from matplotlib.ticker import FuncFormatter

        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"${x:.3g}"))
    low, high = min(p[1] for p in points), max(p[1] for p in points)
    ax.set_xlim(low / 2.5, high * 4)  # room on the right for the labels
    _legend_outside(ax)
    _axes_style(ax, xlabel=xlabel, title=title)
    fig.tight_layout()
    place_labels(ax, [(x, v) for _, x, v in points], [n for n, _, _ in points])
    _save(plt, fig, path)
    return True


def plot_cost_per_question(amortized: Amortization, path: Path, *, title: str = "") -> bool:
    """One line per strategy: a question's cost when n questions are asked over one corpus (its
    index cost shared out, :mod:`longctx.experiments.planning.amortized_costs`), log n from 1 to
    past the last break-even, a dot where two lines cross.

    Returns False, writing nothing, when no strategy has a cost.
    """
    lines = [line for line in amortized.lines if line.index > 0 or line.per_question > 0]
    if not lines:
        return False
    last = max(100, 3 * amortized.largest_crossing())
    ns = sorted({max(1, round(last ** (i / 199))) for i in range(200)})
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for line in lines:
        ax.plot(
            ns,
            [line.at(n) for n in ns],
            label=line.strategy,
            color=strategy_color(line.strategy),
            linewidth=1.6,
        )
    by_name = {line.strategy: line for line in lines}
    for b in amortized.crossings():
        if b.strategy in by_name and b.questions is not None:
            ax.scatter(
                [b.questions],
                [by_name[b.strategy].at(b.questions)],
                s=28,
                color=strategy_color(b.strategy),
                zorder=3,
                edgecolors="0.2",
            )
    _log_token_axis(ax)  # 1, 2, 5, 10, 20 ... questions
    if all(line.at(last) > 0 for line in lines):
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(
            FuncFormatter(
                (lambda y, _: f"${y:.3g}")
                if amortized.unit == "USD"
                else (lambda y, _: human_tokens(y))
            )
        )
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("questions asked over one corpus")
    ax.set_ylabel(
        f"{amortized.unit} per question"
        + (" (prompt + completion)" if amortized.unit == "tokens" else "")
    )
    ax.set_title(f"{title}: cost per question, index cost shared out")
    ax.grid(alpha=0.3)
    _legend_outside(ax)
    fig.tight_layout()
    _save(plt, fig, path)
    return True


def place_labels(
    ax: Any, points: Sequence[tuple[float, float]], names: Sequence[str], *, gap: float = 3.0
) -> list[Any]:
    """Label each point beside it, pushing labels apart vertically until none overlap.

    Labels sit right of their point (left when that leaves the axes); a label that had to
    move is joined to its point by a thin line. Works in display pixels, so log axes and
    coincident points are handled alike. Returns the text artists.
    """
    fig = ax.figure
    fig.canvas.draw()  # sizes of text need a renderer
    renderer = fig.canvas.get_renderer()
    box = ax.get_window_extent(renderer)
    sizes = []
    for name in names:  # measure each label once, with the font it will have
        probe = ax.text(0, 0, name, fontsize=9)
        extent = probe.get_window_extent(renderer)
        sizes.append((extent.width, extent.height))
        probe.remove()
    anchors = [tuple(ax.transData.transform(xy)) for xy in points]
    pad = 8 * fig.dpi / 72
    lefts = [
        px + pad if px + pad + w <= box.x1 else px - pad - w
        for (px, _), (w, _) in zip(anchors, sizes)
    ]
    ys = _spread(anchors, lefts, sizes, gap=gap, bottom=box.y0, top=box.y1)
    to_points = 72 / fig.dpi
    texts = []
    for name, xy, (px, py), left, y, (w, _) in zip(names, points, anchors, lefts, ys, sizes):
        right_side = left > px
        offset = ((left - px if right_side else left + w - px) * to_points, (y - py) * to_points)
        arrow = (
            {"arrowstyle": "-", "color": "0.6", "lw": 0.6, "shrinkA": 1, "shrinkB": 4}
            if abs(y - py) > 2
            else None
        )
        texts.append(
            ax.annotate(
                name,
                xy,
                xytext=offset,
                textcoords="offset points",
                va="center",
                ha="left" if right_side else "right",
                fontsize=9,
                color=strategy_color(name),
                arrowprops=arrow,
            )
        )
    return texts


def _spread(anchors, lefts, sizes, *, gap: float, bottom: float, top: float) -> list[float]:
    """Vertical label centres (pixels): start at each point's height, then separate every pair
    whose boxes overlap horizontally, each label kept inside the axes, until none overlaps
    (deterministic, bounded passes)."""
    ys = [py for _, py in anchors]
    order = sorted(range(len(ys)), key=lambda i: (ys[i], i))
    for _ in range(500):
        moved = False
        for a in range(len(order)):
            for b in range(a + 1, len(order)):
                i, j = order[a], order[b]
                if lefts[i] + sizes[i][0] <= lefts[j] or lefts[j] + sizes[j][0] <= lefts[i]:
                    continue  # side by side: no vertical conflict
                need = (sizes[i][1] + sizes[j][1]) / 2 + gap
                overlap = need - abs(ys[j] - ys[i])
                if overlap > 0.01:
                    low, high = (i, j) if (ys[i], a) <= (ys[j], b) else (j, i)
                    ys[low] -= overlap / 2
                    ys[high] += overlap / 2
                    moved = True
        # keep every label inside the axes (a label held at an edge makes its
        # neighbour move on the next pass)
        ys = [
            min(max(y, bottom + sizes[i][1] / 2), top - sizes[i][1] / 2) for i, y in enumerate(ys)
        ]
        order = sorted(range(len(ys)), key=lambda i: (ys[i], i))
        if not moved:
            break
    return ys


def _log_token_axis(ax: Any) -> None:
    """Log x axis with ticks at 1, 2 and 5 per decade, written 500, 2K, 1M (no crowded
    minor labels)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: human_tokens(x)))
    ax.xaxis.set_minor_formatter(NullFormatter())


def human_tokens(value: float) -> str:
    """500, 2K, 1.5M."""
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if value >= size:
            return f"{value / size:.3g}{unit}"
    return f"{value:.3g}"


def _legend_outside(ax: Any) -> None:
    """The legend right of the axes, never over the data."""
    ax.legend(
        loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False, fontsize=9
    )


def _axes_style(ax: Any, *, xlabel: str, title: str) -> None:
    """Shared axes (scores are percentages)."""
    ax.set_ylim(-3, 103)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("score")
    ax.set_title(title)
    ax.grid(alpha=0.3)


def _finish(plt, fig, ax, path: Path, *, xlabel: str, title: str) -> None:
    """Shared axes, then write the PNG and free the figure."""
    _axes_style(ax, xlabel=xlabel, title=title)
    fig.tight_layout()
    _save(plt, fig, path)


def _save(plt, fig, path: Path) -> None:
    fig.savefig(path, dpi=120, bbox_inches="tight")  # "tight" keeps the outside legend in the file
    plt.close(fig)
