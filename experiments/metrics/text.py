"""Token-overlap and ROUGE primitives shared by LongBench v1 and LV-Eval.

Both benchmarks score with the same normalisers and the same multiset F1 (LV-Eval's
``metrics.py`` is a modified copy of LongBench's), so they live here once. Every
function is pure: text in, float out.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

from longctx.experiments.metrics.registry import METRICS

VERSION = 1

#: Chinese punctuation stripped by the official ``normalize_zh_answer`` (plus ASCII punctuation).
CN_PUNCTUATION = (
    "！？｡。＂＃＄％＆＇（）＊＋，－／：；＜＝＞＠［＼］＾＿｀｛｜｝～｟｠｢｣､、〃》「」"
    "『』【】〔〕〖〗〘〙〚〛〜〝〞〟〰〾〿–—‘’‛“”„‟…‧﹏."
)
_EN_PUNCT = frozenset(string.punctuation)
_ALL_PUNCT = frozenset(string.punctuation + CN_PUNCTUATION)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD-style normalisation: lowercase, drop ASCII punctuation, articles, extra spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _EN_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def normalize_zh_answer(text: str) -> str:
    """Chinese normalisation: lowercase, drop ASCII and Chinese punctuation, remove
    all whitespace."""
    return "".join("".join(ch for ch in text.lower() if ch not in _ALL_PUNCT).split())


def jieba_tokens(text: str) -> list[str]:
    """Words of ``text`` from jieba's precise mode (imported lazily: it loads a dictionary)."""
    import jieba

    return list(jieba.cut(text, cut_all=False))


def zh_tokens(text: str) -> list[str]:
    """Jieba tokens of the raw text, each normalised, empty ones dropped (official order)."""
    return [t for t in (normalize_zh_answer(tok) for tok in jieba_tokens(text)) if t]


def token_f1(prediction: Sequence[str], ground_truth: Sequence[str]) -> float:
    """Multiset token-overlap F1; 0.0 when nothing overlaps (so empty inputs score 0)."""
    num_same = sum((Counter(prediction) & Counter(ground_truth)).values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(prediction)
    recall = num_same / len(ground_truth)
    return 2 * precision * recall / (precision + recall)


@METRICS.register("qa_f1")
def qa_f1(prediction: str, ground_truth: str, **_: object) -> float:
    """LongBench ``qa_f1_score``: F1 over whitespace tokens of the normalised strings."""
    return token_f1(normalize_answer(prediction).split(), normalize_answer(ground_truth).split())


@METRICS.register("qa_f1_zh")
def qa_f1_zh(prediction: str, ground_truth: str, **_: object) -> float:
    """LongBench ``qa_f1_zh_score``: F1 over normalised jieba tokens of the raw strings."""
    return token_f1(zh_tokens(prediction), zh_tokens(ground_truth))


@METRICS.register("rouge_l")
def rouge_l(prediction: str, ground_truth: str, **_: object) -> float:
    """ROUGE-L F of the ``rouge`` package, as the official code computes it.

    The official code wraps the call in a bare ``except`` returning 0.0; the package
    raises ``ValueError`` for an empty (or whitespace-only) hypothesis or reference
    and ``RecursionError`` on pathological inputs, so exactly those score 0.0 here.
    """
    from rouge import Rouge

    try:
        scores = Rouge().get_scores([prediction], [ground_truth], avg=True)
    except (ValueError, RecursionError, ZeroDivisionError):
        return 0.0
    return float(scores["rouge-l"]["f"])


@METRICS.register("rouge_l_zh")
def rouge_l_zh(prediction: str, ground_truth: str, **_: object) -> float:
    """LongBench ``rouge_zh_score``: jieba-tokenise, join with spaces, then ROUGE-L F."""
    return rouge_l(" ".join(jieba_tokens(prediction)), " ".join(jieba_tokens(ground_truth)))
