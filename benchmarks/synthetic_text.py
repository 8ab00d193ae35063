"""Deterministic filler corpora of a chosen token size, for performance measurements only.

Words are drawn from a Zipf distribution over a synthetic vocabulary, so BM25 sees a
realistic long-tailed vocabulary and postings lists. The text has no meaning; the
CorpusQA-style generator with exact answers is a separate tool.
"""

from __future__ import annotations

import numpy as np

from longctx.retrieval import Corpus
from longctx.retrieval.tokens import count_tokens

_SYLLABLES = (
    "ka lo mi ne ru sa ti vo ze ba de fi gu ho ja ke li mo nu pa qui re so tu ve wa xi yo zu"
).split()


def vocabulary(size: int, seed: int = 0) -> list[str]:
    """``size`` distinct pseudo-words of 1-4 syllables."""
    rng = np.random.default_rng(seed)
    words: set[str] = set()
    while len(words) < size:
        n = int(rng.integers(1, 5))
        words.add("".join(rng.choice(_SYLLABLES, n)))
    return sorted(words)


def generate_corpus(
    num_tokens: int, *, doc_tokens: int = 4000, vocab_size: int = 50_000, seed: int = 0
) -> Corpus:
    """A corpus of about ``num_tokens`` cl100k tokens in documents of about ``doc_tokens``."""
    rng = np.random.default_rng(seed)
    vocab = np.array(vocabulary(vocab_size, seed))
    ranks = np.arange(1, vocab_size + 1)
    probs = 1.0 / ranks**1.07
    probs /= probs.sum()
    sample = " ".join(vocab[rng.choice(vocab_size, 2000, p=probs)])
    tokens_per_word = count_tokens(sample) / 2000
    words_per_doc = max(int(doc_tokens / tokens_per_word), 10)
    n_docs = max(round(num_tokens / (words_per_doc * tokens_per_word)), 1)
    texts = []
    for _ in range(n_docs):
        words = vocab[rng.choice(vocab_size, words_per_doc, p=probs)]
        sentences = [
            " ".join(words[i : i + 15]).capitalize() + "." for i in range(0, len(words), 15)
        ]
        texts.append(" ".join(sentences))
    return Corpus.from_texts(texts, titles=[f"Synthetic {i}" for i in range(n_docs)])


def sample_queries(
    n: int, *, vocab_size: int = 50_000, zipf: bool = False, seed: int = 1
) -> list[str]:
    """``n`` queries of 3-6 words: uniform over the vocabulary (mostly tail terms, short
    postings), or with the corpus's Zipf skew (head terms, long postings: the slow case)."""
    rng = np.random.default_rng(seed)
    vocab = vocabulary(vocab_size, 0)
    probs = None
    if zipf:
        probs = 1.0 / np.arange(1, vocab_size + 1) ** 1.07
        probs /= probs.sum()
    return [
        " ".join(vocab[int(i)] for i in rng.choice(vocab_size, int(rng.integers(3, 7)), p=probs))
        for _ in range(n)
    ]
