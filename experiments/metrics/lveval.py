"""LV-Eval metrics, as the official ``metrics.py``/``evaluation.py`` compute them.

* Keyword-recall-gated F1: the recall of ``answer_keywords`` in the prediction
  (blacklisted words dropped from the *overlap only*) must reach 0.2 (English) or
  0.4 (Chinese), else the score is 0; above the gate the plain F1 against the answer
  is returned (the blacklist is *not* applied to the F1, contrary to the README, and
  the paper states the two gates swapped).
* Chinese: without keywords the gold answer itself is the keyword set, so the gate
  always applies; English without keywords has no gate.
* ``factrecall_en``/``factrecall_zh`` use plain F1; ``dureader_mixup`` uses ROUGE-L
  over jieba tokens with the Chinese blacklist removed.
* Only ``answers[0]`` is scored (the official loop ``break``s after the first gold).
"""

from __future__ import annotations

from collections import Counter

from longctx.experiments.metrics.registry import METRICS
from longctx.experiments.metrics.text import (
    jieba_tokens,
    normalize_answer,
    normalize_zh_answer,
    rouge_l,
    token_f1,
    zh_tokens,
)
from longctx.retrieval.contract.errors import UnknownName

VERSION = 1

GATE_EN = 0.2
GATE_ZH = 0.4

# fmt: off
ABANDON_WORDS_EN = frozenset([
    "and", "to", "of", "in", "her", "was", "with", "for", "it", "from", "is", "that", "his", "he",
    "by", "she", "they", "or", "at", "because", "be", "on", "are", "their", "what", "as", "had",
    "were", "about", "being", "this", "who", "but", "have", "has", "when", "which", "does",
])
ABANDON_WORDS_ZH = frozenset([
    "的", "和", "是", "等", "在", "年", "可以", "为", "与", "‰", "了", "或", "一种", "月", "c",
    "至", "日", "有", "进行", "于", "不", "中", "×", "根据", "小", "由", "亩", "也", "要", "指",
    "法", "会", "元", "主要", "以及", "通过", "首先", "对", "然后", "号", "以", "所", "后", "丁",
    "包括", "无", "将", "用", "能", "形", "方面", "因素", "位于", "而", "从", "到", "一定", "用于",
    "但", "使用", "让", "具有", "并", "亿元", "万元", "上", "类", "基于", "才", "来", "地", "片",
    "其他", "个", "或者", "变得", "时", "给", "你", "使", "条", "受", "已经", "带", "度",
])
# fmt: on


def keyword_recall(
    prediction_tokens: list[str], keyword_tokens: list[str], blacklist: frozenset[str]
) -> float:
    """Multiset overlap of prediction and keyword tokens, blacklist removed, over all
    keyword tokens."""
    common = Counter(prediction_tokens) & Counter(keyword_tokens)
    same = sum(n for tok, n in common.items() if tok not in blacklist)
    return same / len(keyword_tokens)


@METRICS.register("lveval_qa_f1_gated")
def qa_f1_gated(
    prediction: str, ground_truth: str, keywords: str | None = None, **_: object
) -> float:
    """English ``qa_f1_score_with_gold_ans``: F1 gated by keyword recall >= 0.2."""
    pred = normalize_answer(prediction).split()
    if keywords:
        kw = normalize_answer(keywords).split()
        # An all-punctuation keyword string would divide by zero
        # officially; treat it as no keywords.
        if kw and keyword_recall(pred, kw, ABANDON_WORDS_EN) < GATE_EN:
            return 0.0
    return token_f1(pred, normalize_answer(ground_truth).split())


@METRICS.register("lveval_qa_f1_zh_gated")
def qa_f1_zh_gated(
    prediction: str, ground_truth: str, keywords: str | None = None, **_: object
) -> float:
    """Chinese ``qa_f1_zh_score_with_gold_ans``: F1 gated by keyword recall >= 0.4.

    Without keywords the gold answer is used as the keyword set.
    """
    pred = zh_tokens(prediction)
    kw = zh_tokens(keywords or ground_truth)
    if kw and keyword_recall(pred, kw, ABANDON_WORDS_ZH) < GATE_ZH:
        return 0.0
    return token_f1(pred, zh_tokens(ground_truth))


@METRICS.register("lveval_rouge_zh_blacklist")
def rouge_zh_blacklist(prediction: str, ground_truth: str, **_: object) -> float:
    """``rouge_zh_score_blacklist``: jieba twice (as official), normalise, drop
    blacklist, ROUGE-L F."""

    def prepare(text: str) -> str:
        tokens = jieba_tokens(" ".join(jieba_tokens(text)))
        return " ".join(
            t for t in (normalize_zh_answer(tok) for tok in tokens) if t not in ABANDON_WORDS_ZH
        )

    return rouge_l(prepare(prediction), prepare(ground_truth))


#: Official ``DATASET_METRIC`` map as registered metric names (keys are dataset names
#: without the length suffix).
DATASET_METRIC = {
    "hotpotwikiqa_mixup": "lveval_qa_f1_gated",
    "loogle_SD_mixup": "lveval_qa_f1_gated",
    "loogle_CR_mixup": "lveval_qa_f1_gated",
    "loogle_MIR_mixup": "lveval_qa_f1_gated",
    "multifieldqa_en_mixup": "lveval_qa_f1_gated",
    "multifieldqa_zh_mixup": "lveval_qa_f1_zh_gated",
    "factrecall_en": "qa_f1",
    "factrecall_zh": "qa_f1_zh",
    "cmrc_mixup": "lveval_qa_f1_zh_gated",
    "lic_mixup": "lveval_qa_f1_zh_gated",
    "dureader_mixup": "lveval_rouge_zh_blacklist",
}


def score_item(
    dataset: str,
    prediction: str,
    answers: list[str],
    keywords: str | None = None,
    *,
    all_answers: bool = False,
) -> float:
    """One item's score in [0, 1].

    Args:
        dataset: Dataset name without length suffix (e.g. ``cmrc_mixup``).
        prediction: Model output.
        answers: Gold answers.
        keywords: ``answer_keywords`` of the record, if any.
        all_answers: ``False`` (official): score ``answers[0]`` only. ``True`` (fixed):
            the max over all gold answers, as LongBench does.
    """
    if dataset not in DATASET_METRIC:
        raise UnknownName(
            f"Unknown LV-Eval dataset {dataset!r}; known: {', '.join(sorted(DATASET_METRIC))}"
        )
    if not answers:
        return 0.0
    metric = METRICS.get(DATASET_METRIC[dataset])
    golds = answers if all_answers else answers[:1]
    return max(metric(prediction, gold, keywords=keywords) for gold in golds)
