"""BrowseComp-Plus's per-question corpora: each query's evidence and gold documents plus seeded
negatives, N documents in all (1,000 in the RLM paper, Zhang et al. 2025, section 4: "1000
randomly chosen documents", the gold and evidence documents among them), chosen once and cached
so every strategy and every later run reads the same documents.

The choice is a pure function of (query, the corpus's document ids, N, seed, negatives rule):
:func:`choose_documents`. :func:`selections` keeps the choices of a whole release in one JSON
file under ``<cache>/browsecomp_plus/``, keyed by the digests of the release and corpus files and
the settings, with a checksum of its content; a file that does not match its key or checksum is
chosen again (and replaced whole), never read. The documents' texts then come from the corpus files,
read once for the union of the chosen ids (:func:`documents_for`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from longctx.experiments.benchmarks.base import BenchmarkDataError
from longctx.experiments.benchmarks.browsecomp_plus_data import Query, corpus_ids, corpus_rows
from longctx.retrieval import Document
from longctx.retrieval.cache_files import read_json_object, write_json_object
from longctx.retrieval.checksums import digest_file, digest_texts

#: Bump on any change to how documents are chosen: it is part of every cache key.
SELECTION_VERSION = 1
#: Documents per question in the RLM paper's BrowseComp-Plus setting.
PAPER_DOCUMENTS = 1_000
#: ``random``: negatives drawn uniformly from the rest of the corpus (the RLM paper);
#: ``hard``: the release's own negatives for the query first, then random ones.
NegativesRule = Literal["random", "hard"]
NEGATIVES_RULES = ("random", "hard")


def required_documents(query: Query) -> list[str]:
    """A query's evidence then gold documents, each once, in the release's order."""
    return list(dict.fromkeys((*query.evidence, *query.gold)))


def choose_documents(
    query: Query,
    all_ids: Sequence[str],
    n: int,
    *,
    seed: int = 0,
    negatives: NegativesRule = "random",
    known: set[str] | frozenset[str] | None = None,
) -> list[str]:
    """The ``n`` documents of ``query``'s corpus: its evidence and gold documents and seeded
    negatives from ``all_ids``, shuffled together (so position says nothing about relevance).

    The random stream is seeded by ``seed`` and the query id, so one query's documents do not
    depend on which other queries are loaded. ``known``: ``set(all_ids)``, when the caller has it.

    Raises:
        BenchmarkDataError: ``n`` is smaller than the query's evidence and gold documents, or
            larger than the corpus, or a judged document is not in the corpus.
    """
    required = required_documents(query)
    known = known if known is not None else set(all_ids)
    absent = [d for d in required if d not in known]
    if absent:
        raise BenchmarkDataError(
            f"BrowseComp-Plus query {query.query_id}: judged document(s) {absent[:5]} are not in "
            "the corpus (is it the full Tevatron/browsecomp-plus-corpus?)"
        )
    if n < len(required) or n > len(known):
        raise BenchmarkDataError(
            f"BrowseComp-Plus query {query.query_id}: {n} documents cannot hold its "
            f"{len(required)} evidence and gold documents within a corpus of {len(known)}"
        )
    rng = random.Random(f"browsecomp_plus:{seed}:{query.query_id}")
    chosen = list(required)
    taken = set(chosen)
    if negatives == "hard":
        for d in query.negatives:
            if len(chosen) < n and d in known and d not in taken:
                chosen.append(d)
                taken.add(d)
    elif negatives != "random":
        raise ValueError(f"negatives must be one of {NEGATIVES_RULES}, got {negatives!r}")
    need = n - len(chosen)
    if need:
        pool = rng.sample(range(len(all_ids)), min(len(all_ids), need + len(taken)))
        chosen += [d for d in (all_ids[i] for i in pool) if d not in taken][:need]
    rng.shuffle(chosen)
    return chosen


def _files_digest(paths: Iterable[Path]) -> list[str]:
    return [f"{p.name}:{size}:{digest}" for p in paths for size, digest in [digest_file(p)]]


def selection_key(release: Path, corpus: Sequence[Path], n: int, seed: int, negatives: str) -> str:
    """The cache key of a release's selections: what they are computed from."""
    parts = [
        f"v{SELECTION_VERSION}",
        *_files_digest([release]),
        *_files_digest(corpus),
        f"n={n}",
        f"seed={seed}",
        f"negatives={negatives}",
    ]
    return digest_texts(parts)


def _checksum(chosen: Mapping[str, Sequence[str]]) -> str:
    return digest_texts(f"{q}\t{','.join(ids)}" for q, ids in chosen.items())


def selections(
    queries: Sequence[Query],
    *,
    release: Path,
    corpus: Sequence[Path],
    n: int,
    seed: int = 0,
    negatives: NegativesRule = "random",
    cache_dir: Path,
) -> dict[str, list[str]]:
    """query id -> its documents (:func:`choose_documents`), from the cache when it holds this
    release's choices for these settings, else chosen now and cached."""
    key = selection_key(release, corpus, n, seed, negatives)
    path = Path(cache_dir) / "browsecomp_plus" / f"selection-{key[:32]}.json"
    cached = read_json_object(path)
    chosen = cached.get("queries")
    if (
        cached.get("key") == key
        and isinstance(chosen, dict)
        and cached.get("checksum") == _checksum(chosen)
        and all(q.query_id in chosen for q in queries)
    ):
        return {q.query_id: list(chosen[q.query_id]) for q in queries}
    all_ids = corpus_ids(corpus)
    if len(frozenset(all_ids)) != len(all_ids):
        raise BenchmarkDataError("BrowseComp-Plus: the corpus repeats a docid")
    known = frozenset(all_ids)
    fresh = {
        q.query_id: choose_documents(q, all_ids, n, seed=seed, negatives=negatives, known=known)
        for q in queries
    }
    everything = dict(chosen) if cached.get("key") == key and isinstance(chosen, dict) else {}
    everything.update(fresh)
    write_json_object(
        path,
        {
            "key": key,
            "settings": {"n": n, "seed": seed, "negatives": negatives},
            "version": SELECTION_VERSION,
            "checksum": _checksum(everything),
            "queries": everything,
        },
        indent=0,
    )
    return fresh


def documents_for(corpus: Sequence[Path], wanted: set[str] | None) -> dict[str, Document]:
    """docid -> :class:`~longctx.retrieval.Document` for the ``wanted`` ids (every row with
    ``None``): one pass over the corpus files. Its url is kept in ``metadata``; the corpus has no
    separate title (a page's own title is in its text)."""
    docs: dict[str, Document] = {}
    for row in corpus_rows(corpus, wanted=wanted):
        docid = str(row["docid"])
        docs[docid] = Document(
            doc_id=docid, text=str(row.get("text") or ""), metadata={"url": row.get("url") or ""}
        )
    missing = (wanted or set()) - set(docs)
    if missing:
        raise BenchmarkDataError(
            f"BrowseComp-Plus: {len(missing)} chosen document(s) are not in the corpus files "
            f"(e.g. {sorted(missing)[:3]}); the corpus changed since they were chosen?"
        )
    return docs


def describe(n: int | None, seed: int, negatives: str) -> dict[str, Any]:
    """The corpus setting a sample records (``n`` ``None``: the full corpus)."""
    return {"docs_per_query": n or "full", "corpus_seed": seed, "negatives": negatives}
