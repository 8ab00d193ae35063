"""Our template's prompt cut to the window per question, with the corpus tokenized once.

Every question over one corpus shares our prompt up to the question: the template's text
with every document and the literal text before the question field, the *context*. Once
per (corpus, tokenizer, budget, template), :func:`prepared_context` tokenizes what the
official cut needs of it: the kept head (the first half of the budget) and the context's
last tokens (all of them when the context is within ``2 x 16`` characters a budget token,
else the end slice :func:`~graphs.full_context.truncation.end_ids` tokenizes for the
tail). A question then tokenizes only a short *stretch*, the context's last
``STITCH_CHARS`` characters or so, followed by its own *suffix* (the question and the
instruction), and puts those tokens in place of the stretch's cached ones.

The stitched tokens are those of the whole prompt when

1. the stretch tokenized alone gives exactly its cached tokens (checked once per
   context): the tokenizer starts cleanly where the stretch starts; and
2. the stretch + suffix tokens begin with the stretch's cached tokens up to
   ``STITCH_GUARD_CHARS`` characters before the context's end (checked per question):
   the suffix changed only tokens near its own start.

Regex pre-tokenizers (tiktoken, byte-level BPE) scan left to right and look ahead only
over one run of letters, digits, punctuation or whitespace, so both hold unless the
context ends with such a run hundreds of characters long; when either check fails the
question takes the exact path (tokenizing the prompt's end as
:func:`~graphs.full_context.truncation.truncate_prompt` does). ``tests/test_full_context_stitch.py``
compares the stitched cut with the cut of the whole prompt's tokens over many corpora,
questions and tokenizers.
"""

from __future__ import annotations

import string
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from longctx.graphs.full_context.prompts import FULL_CONTEXT_TEMPLATE
from longctx.graphs.full_context.truncation import CHARS_PER_TOKEN_BOUND, end_ids, truncate_prompt
from longctx.graphs.plugin.api import DEFAULT_INSTRUCTION, format_documents
from longctx.retrieval.contract import Corpus, Question

#: Characters at the context's end re-tokenized with each question (at least; a token boundary).
STITCH_CHARS = 512
#: The last characters of the stretch whose tokens a question's suffix may change; the
#: stretch's tokens before them must come out unchanged, or the question takes the exact path.
STITCH_GUARD_CHARS = 128
#: Token boundaries tried (one token further back each) for a clean start of the stretch.
STITCH_TRIES = 16
#: Prepared contexts kept per process, the most recently used.
MAX_PREPARED = 8

Encode = Callable[[str], list[int]]
Decode = Callable[[list[int]], str]


def _template_parts(template: str) -> tuple[str, str]:
    """``template``'s literal text before ``{context}`` and between ``{context}`` and the next
    field."""
    before: list[str] = []
    after: list[str] = []
    seen = False
    for literal, field, _spec, _conv in string.Formatter().parse(template):
        (after if seen else before).append(literal)
        if seen and field is not None:
            break
        if field == "context":
            seen = True
    return "".join(before), "".join(after)


_PREFIX, _FIXED = _template_parts(FULL_CONTEXT_TEMPLATE)
#: What keys a prepared context besides the corpus, tokenizer and budget.
_TEMPLATE_KEY = FULL_CONTEXT_TEMPLATE


def question_suffix(question: Question) -> str:
    """Our prompt after the context: ``FULL_CONTEXT_TEMPLATE`` after ``{context}``, filled,
    less the literal text before the question (which belongs to the context)."""
    rest = FULL_CONTEXT_TEMPLATE[FULL_CONTEXT_TEMPLATE.index("{context}") + len("{context}") :]
    filled = rest.format(
        question=question.render(), instruction=question.instruction or DEFAULT_INSTRUCTION
    )
    if not filled.startswith(
        _FIXED
    ):  # pragma: no cover - a template whose literal text is not a prefix of its filling
        raise ValueError(
            "FULL_CONTEXT_TEMPLATE's text after {context} does not start with its literal part"
        )
    return filled[len(_FIXED) :]


_BODIES: dict[str, str] = {}  # corpus fingerprint -> the context (the last corpus only)
_CACHE_LOCK = threading.Lock()


def context_text(corpus: Corpus) -> str:
    """Our prompt before the question's suffix, filled with every document (kept for the
    last corpus seen: questions over it share it)."""
    key = corpus.fingerprint
    with _CACHE_LOCK:
        body = _BODIES.get(key)
    if body is None:
        body = _PREFIX + format_documents(corpus.documents) + _FIXED
        with _CACHE_LOCK:
            _BODIES.clear()
            _BODIES[key] = body
    return body


@dataclass(frozen=True)
class PreparedContext:
    """What every question over one corpus shares of its cut prompt, for one tokenizer and budget.

    Attributes:
        budget: The input budget in tokens.
        total: Tokens of the whole context; ``None`` when it is far beyond the budget and
            only its ends were tokenized.
        head: The kept head's text (the context's first ``budget // 2`` tokens decoded);
            ``None`` when the stretch starts before them (a short context).
        ids: The context's last tokens: at least ``budget // 2`` before the stretch, or all.
        end: The context's last characters the exact path needs (all of it when ``total``
            is known, else its last ``16 x budget``).
        stretch: Tokens at the end of ``ids`` re-tokenized with each question; 0 when no
            clean start was found (every question takes the exact path).
        stretch_text: The text of those tokens, the context's last characters.
        agree: How many of the stretch's first tokens a question's tokens must reproduce.
    """

    budget: int
    total: int | None
    head: str | None
    ids: list[int]
    end: str
    stretch: int
    stretch_text: str
    agree: int

    def stitched(self, suffix: str, encode: Encode) -> list[int] | None:
        """Tokens of the stretch followed by ``suffix``, to put in place of the stretch's
        cached tokens; ``None`` when they do not reproduce the stretch's first ``agree``
        tokens (the suffix reached too far back: take the exact path)."""
        if not self.stretch:
            return None
        fresh = encode(self.stretch_text + suffix)
        start = len(self.ids) - self.stretch
        if fresh[: self.agree] != self.ids[start : start + self.agree]:
            return None
        return fresh

    def cut(self, suffix: str, encode: Encode, decode: Decode) -> tuple[str, bool]:
        """The prompt of context + ``suffix`` middle-truncated to the budget:
        ``(text, was_truncated)``, as :func:`~graphs.full_context.truncation.truncate_prompt` of the
        whole prompt."""
        half = self.budget // 2
        fresh = self.stitched(suffix, encode)
        if fresh is None:  # the exact path
            if self.total is None:
                assert self.head is not None, "a context too long to count keeps its head"
                tail = end_ids(self.end + suffix, half, encode, tail=True)
                return self.head + decode(tail[len(tail) - half :]), True
            return truncate_prompt(self.end + suffix, self.budget, encode, decode)
        if self.total is not None and self.total - self.stretch + len(fresh) <= self.budget:
            return self.end + suffix, False
        start = len(self.ids) - self.stretch  # where the stretch's tokens begin
        head = self.head if self.head is not None else decode((self.ids[:start] + fresh)[:half])
        if len(fresh) >= half:
            tail = fresh[len(fresh) - half :]
        else:
            tail = self.ids[max(start - (half - len(fresh)), 0) : start] + fresh
        return head + decode(tail), True


def _agreed(ids: list[int], chars: int, decode: Decode) -> int:
    """The most leading tokens of ``ids`` that decode to at most ``chars`` characters."""
    k = len(ids)
    while k > 0 and len(decode(ids[:k])) > chars:
        k -= 1
    return k


def _stretch(context: str, ids: list[int], encode: Encode, decode: Decode) -> tuple[int, str, int]:
    """``(tokens, text, agree)`` of the stretch: the fewest last tokens of ``ids`` decoding to at
    least ``STITCH_CHARS`` characters (or all) whose text ends ``context`` and tokenizes alone to
    exactly them; ``(0, "", 0)`` when none of ``STITCH_TRIES`` boundaries does."""
    n = min(len(ids), STITCH_CHARS // 4)
    tries = 0
    while n and tries < STITCH_TRIES:
        text = decode(ids[len(ids) - n :])
        if len(text) < STITCH_CHARS and n < len(ids):
            n = min(len(ids), max(n + 1, n * STITCH_CHARS // max(len(text), 1) + 1))
            continue
        tries += 1
        if context.endswith(text) and encode(text) == ids[len(ids) - n :]:
            return n, text, _agreed(ids[len(ids) - n :], len(text) - STITCH_GUARD_CHARS, decode)
        if n == len(ids):
            break
        n += 1
    return 0, "", 0


def prepare_context(context: str, budget: int, encode: Encode, decode: Decode) -> PreparedContext:
    """Tokenize what every question's cut shares of ``context`` (see the module's docstring)."""
    half = budget // 2
    bound = CHARS_PER_TOKEN_BOUND * budget
    if len(context) > 2 * bound:  # far beyond the budget: only the ends, as truncate_prompt
        head: str | None = decode(end_ids(context, half, encode, tail=False)[:half])
        # room for the stretch (a token holds a character or more)
        ids = end_ids(context, half + STITCH_CHARS, encode, tail=True)
        total, end = None, context[-bound:]
    else:
        ids, end = encode(context), context
        total, head = len(ids), None
    n, text, agree = _stretch(context, ids, encode, decode)
    if total is not None and total - n >= half:
        head = decode(ids[:half])
    ids = ids[max(len(ids) - n - half, 0) :]  # what a tail can need
    return PreparedContext(
        budget=budget,
        total=total,
        head=head,
        ids=ids,
        end=end,
        stretch=n,
        stretch_text=text,
        agree=agree,
    )


_PREPARED: OrderedDict[tuple[Any, ...], PreparedContext] = OrderedDict()
_PREPARING: dict[tuple[Any, ...], threading.Lock] = {}


def prepared_context(
    corpus: Corpus, budget: int, encode: Encode, decode: Decode, tokenizer: str
) -> PreparedContext:
    """:func:`prepare_context` of our prompt over ``corpus``, once per (corpus fingerprint,
    ``tokenizer``, ``budget``, template) in this process; questions asking at the same time
    wait for one preparation."""
    key = (corpus.fingerprint, tokenizer, budget, _TEMPLATE_KEY)
    with _CACHE_LOCK:
        found = _PREPARED.get(key)
        if found is not None:
            _PREPARED.move_to_end(key)
            return found
        lock = _PREPARING.setdefault(key, threading.Lock())
    with lock:
        with _CACHE_LOCK:
            found = _PREPARED.get(key)
        if found is None:
            found = prepare_context(context_text(corpus), budget, encode, decode)
            with _CACHE_LOCK:
                _PREPARED[key] = found
                while len(_PREPARED) > MAX_PREPARED:
                    _PREPARED.popitem(last=False)
                _PREPARING.pop(key, None)
    return found


def truncate_our_prompt(
    corpus: Corpus,
    question: Question,
    max_tokens: int,
    encode: Encode,
    decode: Decode,
    tokenizer: str,
) -> tuple[str, bool]:
    """:func:`~graphs.full_context.truncation.truncate_prompt` of our filled template, the same
    text, with the corpus's share tokenized once (:func:`prepared_context`) and per question only
    a short stretch and the question's suffix."""
    return prepared_context(corpus, max_tokens, encode, decode, tokenizer).cut(
        question_suffix(question), encode, decode
    )


def clear_prepared() -> None:
    """Forget every prepared context and formatted corpus (tests; freeing memory)."""
    with _CACHE_LOCK:
        _PREPARED.clear()
        _BODIES.clear()
