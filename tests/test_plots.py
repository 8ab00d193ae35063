"""Plots people read: one colour per strategy everywhere, labels that never overlap, no
one-bucket trend."""

from __future__ import annotations

from pathlib import Path

import pytest

from longctx.experiments.reports.plots import (
    place_labels,
    plot_accuracy_vs_length,
    plot_accuracy_vs_tokens,
    strategy_color,
)
from longctx.graphs import STRATEGIES

#: Seven labels to place on one chart (the names only label points: any seven would do).
NAMES = ["rag", "full_context", "memagent", "pai", "pai_minus", "self_ask", "self_route"]


def test_each_strategy_has_one_fixed_colour_and_unknown_names_are_stable():
    # the strategies declared in a package's plugin.toml (a test's own registration, left in the
    # process by a file that ran before on this worker, declares no colour)
    names = [n for n in STRATEGIES.names() if STRATEGIES.declared(n)]
    assert len(names) >= 10
    assert [strategy_color(n) for n in names] == [
        STRATEGIES.get(n).presentation.color for n in names
    ]
    # each its own, declared in its package
    assert len({strategy_color(n) for n in names}) == len(names)
    assert strategy_color("my_plugin") == strategy_color("my_plugin") and strategy_color(
        "my_plugin"
    ).startswith("#")


@pytest.mark.parametrize(
    "score", [0.0, 100.0]
)  # stacked against the bottom, and against the top of the axes
def test_labels_of_coincident_points_do_not_overlap(score):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    points = [(1000.0, score)] * 7  # the demo's case: every strategy at the same place
    ax.scatter([p[0] for p in points], [p[1] for p in points])
    ax.set_xscale("log")
    ax.set_ylim(-3, 103)
    texts = place_labels(ax, points, NAMES)
    fig.canvas.draw()
    from matplotlib.text import Text

    boxes = [Text.get_window_extent(t) for t in texts]  # the label itself, without its leader line
    axes_box = ax.get_window_extent()
    for i, a in enumerate(boxes):
        assert axes_box.y0 - 1 <= a.y0 and a.y1 <= axes_box.y1 + 1, NAMES[i]
        for j in range(i + 1, len(boxes)):
            assert not a.overlaps(boxes[j]), (NAMES[i], NAMES[j])
    plt.close(fig)


def test_accuracy_vs_length_needs_two_buckets(tmp_path: Path):
    one = [{"length": "<32K", **{n: 0.0 for n in NAMES}}]
    assert (
        plot_accuracy_vs_length(one, tmp_path / "one.png") is False
        and not (tmp_path / "one.png").exists()
    )
    two = one + [{"length": "32K-160K", **{n: 10.0 for n in NAMES}}]
    assert (
        plot_accuracy_vs_length(two, tmp_path / "two.png") is True
        and (tmp_path / "two.png").stat().st_size > 0
    )


def test_legend_sits_outside_the_axes(tmp_path: Path, monkeypatch):
    import matplotlib.pyplot as plt

    seen = {}
    close = plt.close

    def keep(fig):
        ax = fig.axes[0]
        fig.canvas.draw()
        seen["legend"], seen["axes"] = ax.get_legend().get_window_extent(), ax.get_window_extent()
        close(fig)

    monkeypatch.setattr(plt, "close", keep)
    summary = [
        {"strategy": n, "score": 50.0, "prompt_tokens": 100 * (i + 1), "completion_tokens": 5}
        for i, n in enumerate(NAMES)
    ]
    assert plot_accuracy_vs_tokens(summary, tmp_path / "t.png")
    assert seen["legend"].x0 >= seen["axes"].x1  # right of the data, never on it
