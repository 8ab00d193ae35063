"""RULER-HotpotQA loading cost of the over-1M files (document indices rebuilt into text).

    python -m benchmarks.bench_ruler_hqa    # 16 items x 25,600 documents (the 3.5M bucket)
    python -m benchmarks.bench_ruler_hqa --docs 12800 --items 32

Writes, in a temporary folder, a ``hotpotqa_dev.json`` shaped like HotpotQA's distractor
dev set (7,405 questions x 10 paragraphs of about 100 common English words, so about
110 cl100k tokens each; titles repeat, as the real file's do) and an ``eval_{docs}.json``
of index lists, then prints (nothing is asserted): the paragraph pool's size and read
time, the load time, characters and cl100k tokens per item, and the peak RSS of the
process. The real benchmark has 128 items per file; memory grows linearly with items.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import tempfile
import time
from pathlib import Path

from longctx.experiments.benchmarks import load_benchmark
from longctx.experiments.benchmarks.ruler_hqa import HOTPOTQA_DEV, hotpotqa_paragraphs
from longctx.retrieval.tokens import encode

WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which "
    "but have an they you were her she there been one all we their has would when if so no will "
    "more other its out time what about up into them can only some could new two these may first "
    "then do any like my now over such our man me even most made after also did many before must "
    "through back years where much your way well down should because each just those people how "
    "too little state good very make world still own see men work long get here between both life "
    "being under never day same another know while last might us great old year off come since "
    "against go came right used take three"
).split()


def write_pool(path: Path, seed: int) -> None:
    """A HotpotQA-dev-shaped file: 7,405 items x 10 titled paragraphs of 4 sentences."""
    rng = random.Random(seed)
    items = []
    for q in range(7405):
        context = []
        for _ in range(10):
            title = f"Title {rng.randrange(66_635)}"
            own = random.Random(
                title
            )  # one text per title, so repeated titles are duplicate paragraphs
            context.append(
                [title, [" ".join(own.choice(WORDS) for _ in range(25)) + ". " for _ in range(4)]]
            )
        items.append({"_id": str(q), "question": "q?", "answer": "a", "context": context})
    path.write_text(json.dumps(items))


def main() -> None:
    """Build the files, load them and print one table row."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--docs", type=int, default=25600, help="documents per item (12800 or 25600 hold indices)"
    )
    parser.add_argument(
        "--items", type=int, default=16, help="items in the eval file (the benchmark has 128)"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_pool(root / HOTPOTQA_DEV, args.seed)
        t = time.perf_counter()
        pool = hotpotqa_paragraphs(root / HOTPOTQA_DEV)
        pool_s = time.perf_counter() - t
        rng = random.Random(args.seed)
        items = [
            {
                "context": rng.sample(range(len(pool)), args.docs),
                "input": "q?",
                "answers": ["a"],
                "num_docs": args.docs,
                "index": i,
            }
            for i in range(args.items)
        ]
        (root / f"eval_{args.docs}.json").write_text(json.dumps(items))
        t = time.perf_counter()
        samples = load_benchmark("ruler_hqa", root, datasets=[f"eval_{args.docs}"])
        load_s = time.perf_counter() - t
        chars = sum(len(s.corpus[0].text) for s in samples) / len(samples)
        t = time.perf_counter()
        tokens = len(encode(samples[0].corpus[0].text))
        count_s = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"| {args.docs:,} | {len(pool):,} | {pool_s:.1f} | {args.items} | {load_s:.1f} | "
        f"{chars / 1e6:.1f}M | {tokens:,} | {count_s:.1f} | {rss:.0f} |"
    )


if __name__ == "__main__":
    main()
