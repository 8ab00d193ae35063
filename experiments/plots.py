"""PNG plots of a run's report (matplotlib, headless Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt

    return plt


def plot_accuracy_vs_length(by_length: list[dict[str, Any]], path: Path, *, title: str = "") -> None:
    """One line per strategy: mean per-sample score in each corpus-length bucket."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    labels = [row["length"] for row in by_length]
    strategies = [k for k in (by_length[0] if by_length else {}) if k != "length"]
    for name in strategies:
        points = [(i, row[name]) for i, row in enumerate(by_length) if row.get(name) is not None]
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name)
    ax.set_xticks(range(len(labels)), labels)
    ax.legend()
    _finish(plt, fig, ax, path, xlabel="corpus length (tokens)", title=f"{title}: accuracy vs context length")


def plot_accuracy_vs_tokens(summary: list[dict[str, Any]], path: Path, *, title: str = "") -> None:
    """One point per strategy: official score against mean tokens spent per answer (log x)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, row in enumerate(sorted(summary, key=lambda r: (r["prompt_tokens"] or 0) + (r["completion_tokens"] or 0))):
        tokens = (row["prompt_tokens"] or 0) + (row["completion_tokens"] or 0)
        if row["score"] is None or tokens <= 0:
            continue
        ax.scatter(tokens, row["score"], s=60)
        # neighbours on the log axis often sit close: stagger their labels vertically
        ax.annotate(row["strategy"], (tokens, row["score"]), textcoords="offset points", xytext=(6, 6 + 12 * (i % 4)))
    ax.set_xscale("log")
    _finish(plt, fig, ax, path, xlabel="tokens per answer (prompt + completion)", title=f"{title}: accuracy vs tokens spent")


def _finish(plt, fig, ax, path: Path, *, xlabel: str, title: str) -> None:
    """Shared axes (scores are percentages), then write the PNG and free the figure."""
    ax.set_ylim(-3, 103)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("score")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
