"""Evidence ceilings vs corpus size: every strategy's ceiling over the generator's
tiers, and a plot.

    python -m benchmarks.bench_ceilings --out docs/img/ceilings_vs_size.png
    python -m benchmarks.bench_ceilings --tiers 128K 1M 4M --root runs/ceilings

Generates each tier once under ``--root`` (finance, seed 0, a needle at depth 0.5, as
``bench_synth``; an existing tier folder is reused), computes the ceilings of every
strategy with its default config (BM25 indexes cached under ``--root``/cache), prints
one table per tier with the wall seconds of generation and of the ceilings (index
builds included on a cold cache), and plots the complete-evidence share per strategy
against corpus size. Nothing calls a model; a ceiling is an upper bound, not an accuracy.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path
from typing import Any

from longctx.experiments.ceilings.measure import (
    UPPER_BOUND_NOTE,
    ceilings_json,
    compute_ceilings,
    format_table,
)
from longctx.experiments.synth import (
    TIERS,
    NeedleConfig,
    SynthConfig,
    generate,
    load_samples,
    parse_tokens,
)


def tier_folder(root: Path, tier: str, domain: str, seed: int) -> tuple[Path, float | None]:
    """The tier's corpus folder, generated when missing; and the generation seconds
    (``None``: reused)."""
    out = root / f"{domain}-{tier}"
    if (out / "questions.jsonl").exists():
        return out, None
    started = time.perf_counter()
    generate(
        SynthConfig(
            domain=domain,
            target_tokens=parse_tokens(tier),
            seed=seed,
            needle=NeedleConfig(depth=0.5),
        ),
        out,
    )
    return out, time.perf_counter() - started


def plot_ceilings_vs_size(
    results: dict[str, dict[str, Any]], path: Path, *, title: str = ""
) -> None:
    """Two panels, one line per strategy against corpus size (log scale): the complete-evidence
    share (the ceiling) and the mean share of evidence that can reach the final call."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True)
    tiers = list(results)
    sizes = [results[t]["tokens"] for t in tiers]
    names = [c["strategy"] for c in results[tiers[0]]["ceilings"] if not c["skipped"]]
    markers = "osD^v<>x*"
    for ax, key, label in (
        (axes[0], "complete_share", "complete evidence reaches the final call"),
        (axes[1], "mean_share", "mean share of evidence that reaches it (memagent: records)"),
    ):
        for i, name in enumerate(names):
            ys = [
                next(100 * c[key] for c in results[t]["ceilings"] if c["strategy"] == name)
                for t in tiers
            ]
            # small offsets keep overlapping lines visible
            ax.plot(
                sizes,
                [y + (i - len(names) / 2) * 0.6 for y in ys],
                marker=markers[i % len(markers)],
                label=name,
            )
        ax.set_xscale("log")
        ax.set_xticks(sizes, tiers)
        ax.minorticks_off()
        ax.set_ylim(-5, 105)
        ax.set_xlabel("corpus size (cl100k tokens)")
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("% of questions / % of evidence")
    axes[1].legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle(
        title or "Evidence ceilings vs corpus size (upper bounds, not accuracies)", fontsize=10
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    """Parse arguments, generate or reuse tiers, print the ceilings per tier, write the plot."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--tiers", nargs="+", default=list(TIERS), help="tiers (default: 128K 1M 4M 10M)"
    )
    p.add_argument(
        "--root", default="runs/ceilings", help="where tiers are generated and indexes cached"
    )
    p.add_argument("--domain", default="finance")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gold-sub-questions", action="store_true")
    p.add_argument("--out", default="docs/img/ceilings_vs_size.png", help="plot path")
    p.add_argument(
        "--json", help="also write every tier's ceilings (without per-question reach) here"
    )
    p.add_argument("--title", default="", help="plot title")
    args = p.parse_args()
    root = Path(args.root)
    results: dict[str, dict[str, Any]] = {}
    print(UPPER_BOUND_NOTE, "\n")
    for tier in args.tiers:
        folder, gen_s = tier_folder(root, tier, args.domain, args.seed)
        samples = load_samples(folder)
        started = time.perf_counter()
        ceilings = compute_ceilings(
            samples, gold_sub_questions=args.gold_sub_questions, cache_dir=root / "cache"
        )
        secs = time.perf_counter() - started
        tokens = samples[0].corpus.num_tokens
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            format_table(
                ceilings,
                title=f"{args.domain} {tier} ({tokens:,} tokens, {len(samples)} questions)",
            )
        )
        gen = f"generated in {gen_s:.1f} s, " if gen_s is not None else "reused, "
        print(f"({gen}ceilings in {secs:.1f} s, peak RSS so far {rss:.0f} MiB)\n")
        results[tier] = {
            "tokens": tokens,
            "seconds": round(secs, 1),
            **ceilings_json(ceilings, per_question=False),
        }
    plot_ceilings_vs_size(results, Path(args.out), title=args.title)
    print(f"plot: {args.out}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
