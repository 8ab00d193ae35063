"""Background sentences, sampled as the official ``SentenceSampler`` (``shuffle=True``)
samples PG-19.

A random document, from a random character on, cut to ten characters per wanted token,
split into sentences by an untrained Punkt tokenizer (first and last, likely cut, dropped);
each sentence is tokenized with a leading space and kept if at least ``min_sentence_len``
tokens long, until the wanted number of tokens is reached, the last sentence cut to fit.
Sentences left over serve the next sample. Every draw comes from one seeded generator.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Sequence

import numpy as np

from longctx.experiments.synth import filler
from longctx.retrieval.extras import require
from longctx.retrieval.tokenizers import Tokenizer

#: ``SentenceSampler``'s default: sentences under 10 tokens are skipped.
MIN_SENTENCE_LEN = 10


class SentenceSampler:
    """Token-counted background sentences from ``documents`` (a list of texts, or
    ``pick(rng) -> text``)."""

    def __init__(
        self,
        documents: Sequence[str] | Callable[[np.random.Generator], str],
        tokenizer: Tokenizer,
        *,
        rng: np.random.Generator,
        min_sentence_len: int = MIN_SENTENCE_LEN,
    ) -> None:
        require("nltk", extra="babilong", feature="the BABILong generator's sentence splitter")
        # imported here so loading the package stays light
        import nltk  # type: ignore[import-untyped]

        if not callable(documents) and not any(d.strip() for d in documents):
            raise ValueError("The background has no text.")
        self.documents = documents
        self.tokenizer = tokenizer
        self.rng = rng
        self.min_sentence_len = min_sentence_len
        self.splitter = nltk.PunktSentenceTokenizer()
        self.pending: deque[list[int]] = deque()

    def _document(self) -> str:
        if callable(self.documents):
            return self.documents(self.rng)
        return self.documents[int(self.rng.choice(len(self.documents)))]

    def _refill(self, size: int) -> None:
        """``sample_sentences_``: sentences of one random stretch of one random document (retried
        while none)."""
        sentences: list[str] = []
        while not sentences:
            text = self._document()
            if not text:
                continue
            text = text[int(self.rng.choice(len(text))) :][: size * 10]
            sentences = self.splitter.tokenize(text)[1:-1]
        tokenized = self.tokenizer.encode_batch([" " + s for s in sentences])
        self.pending.extend(t for t in tokenized if len(t) >= self.min_sentence_len)

    def sample(self, size: int) -> list[list[int]]:
        """Sentences (token ids) totalling exactly ``size`` tokens, the last one cut; ``[]`` for
        ``size <= 0``."""
        if size <= 0:
            return []
        out: list[list[int]] = []
        total = 0
        while total < size:
            while not self.pending:
                self._refill(size)
            out.append(self.pending.popleft())
            total += len(out[-1])
        if total > size:
            out[-1] = out[-1][: len(out[-1]) - (total - size)]
        return out


#: Paragraphs in one synthetic background document.
SYNTH_PARAGRAPHS = 400


def synth_background(domain: str = "education") -> Callable[[np.random.Generator], str]:
    """Documents of our digit-free synthetic prose (:mod:`longctx.experiments.synth.filler`), one
    per draw, from the sampler's generator."""

    def pick(rng: np.random.Generator) -> str:
        local = random.Random(int(rng.integers(2**63)))
        return "\n\n".join(
            filler.paragraph(local, domain, "the institution") for _ in range(SYNTH_PARAGRAPHS)
        )

    return pick
