"""Table-driven tests of the official benchmark metrics; every expected value computed by hand."""

from __future__ import annotations

import pytest

from longctx.experiments.metrics import METRICS, loong
from longctx.experiments.metrics import corpusqa as cq
from longctx.experiments.metrics import longbench_v1 as lb1
from longctx.experiments.metrics import longbench_v2 as lb2
from longctx.experiments.metrics import lveval as lv
from longctx.experiments.metrics.equivalence import equivalent
from longctx.experiments.metrics.text import (
    normalize_answer,
    normalize_zh_answer,
    qa_f1,
    qa_f1_zh,
    rouge_l,
    rouge_l_zh,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The Eiffel Tower!", "eiffel tower"),
        ("An  apple, a day", "apple day"),
        ("Theatre", "theatre"),
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


def test_normalize_zh_answer_strips_cn_punctuation_and_all_spaces():
    assert normalize_zh_answer("北京， 上海。ABC") == "北京上海abc"


@pytest.mark.parametrize(
    "pred, gold, expected",
    [
        ("The Eiffel Tower", "Eiffel Tower", 1.0),
        ("Paris, France", "Paris", 2 / 3),  # p = 1/2, r = 1
        ("", "Paris", 0.0),
        ("a an the", "the", 0.0),  # both normalise to nothing
        ("paris paris", "paris", 2 / 3),  # multiset: p = 1/2, r = 1
    ],
)
def test_qa_f1(pred, gold, expected):
    assert qa_f1(pred, gold) == pytest.approx(expected)


@pytest.mark.parametrize(
    "pred, gold, expected",
    [
        ("北京", "北京", 1.0),
        ("我在北京", "北京", 0.5),
        ("上海", "北京", 0.0),
    ],  # 我/在/北京: p = 1/3, r = 1
)
def test_qa_f1_zh(pred, gold, expected):
    assert qa_f1_zh(pred, gold) == pytest.approx(expected)


@pytest.mark.parametrize(
    "pred, gold, expected",
    [
        ("the cat sat", "the cat sat", 1.0),
        ("a b c d", "a c", 2 / 3),  # LCS 2: p = 2/4, r = 2/2
        ("", "a", 0.0),  # the package raises on an empty hypothesis; official scores 0
        ("a", "", 0.0),
    ],
)
def test_rouge_l(pred, gold, expected):
    assert rouge_l(pred, gold) == pytest.approx(expected, abs=1e-6)


def test_rouge_l_zh_tokenises_with_jieba():
    # 北京/的/天气 vs 北京/天气: LCS 2, p = 2/3, r = 1 -> F = 0.8
    assert rouge_l_zh("北京的天气", "北京天气") == pytest.approx(0.8, abs=1e-6)


@pytest.mark.parametrize(
    "pred, gold, classes, expected",
    [
        ("Location", "Location", ["Human", "Location", "Number"], 1.0),
        ("Location or Number", "Location", ["Human", "Location", "Number"], 0.5),
        ("no idea", "Location", ["Human", "Location", "Number"], 0.0),  # dead difflib fallback: 0
        # Quirk: "A" is removed while iterating, so "AB" is skipped and survives: 1/2, not 1.
        ("ABC", "ABC", ["A", "AB", "ABC"], 0.5),
    ],
)
def test_classification_score(pred, gold, classes, expected):
    assert lb1.classification_score(pred, gold, all_classes=classes) == pytest.approx(expected)


@pytest.mark.parametrize(
    "name, pred, gold, expected",
    [
        ("retrieval", "Paragraph 3", "Paragraph 3", 1.0),
        ("retrieval", "Paragraph 3 or Paragraph 12", "Paragraph 3", 0.5),
        ("retrieval", "none", "Paragraph 3", 0.0),
        ("retrieval_zh", "段落5", "段落5", 1.0),
        ("count", "There are 7 unique paragraphs, 7", "7", 1.0),
        ("count", "7 or 8", "7", 0.5),
        ("count", "seven", "7", 0.0),
    ],
)
def test_number_metrics(name, pred, gold, expected):
    assert METRICS.get(name)(pred, gold) == pytest.approx(expected)


@pytest.mark.parametrize(
    "pred, gold, expected",
    [
        (
            "```python\n# comment\nreturn x + 1\n",
            "return x+1",
            0.91,
        ),  # first clean line; 2*10/22 -> 91
        ("\n\nabc", "abd", 0.67),  # 2*2/6 = 66.7 -> 67
        ("// only comments", "x = 1", 0.0),  # no clean line: compares ""
    ],
)
def test_code_sim_score(pred, gold, expected):
    assert lb1.code_sim_score(pred, gold) == pytest.approx(expected)


@pytest.mark.parametrize(
    "dataset, pred, answers, expected",
    [
        ("triviaqa", "Paris\nLondon is the capital of England", ["Paris"], 1.0),  # first-line cut
        ("hotpotqa", "Paris\nLondon", ["Paris"], 2 / 3),  # no cut: p = 1/2, r = 1
        ("hotpotqa", "Paris", ["London", "Paris"], 1.0),  # max over golds
        ("trec", "\nLocation\nHuman", ["Location"], 1.0),  # leading newlines stripped, then cut
    ],
)
def test_longbench_v1_score_item(dataset, pred, answers, expected):
    classes = ["Human", "Location"] if dataset == "trec" else None
    assert lb1.score_item(dataset, pred, answers, classes) == pytest.approx(expected)


@pytest.mark.parametrize(
    "length, bucket", [(0, "0-4k"), (3999, "0-4k"), (4000, "4-8k"), (7999, "4-8k"), (8000, "8k+")]
)
def test_longbench_e_bucket(length, bucket):
    assert lb1.longbench_e_bucket(length) == bucket


@pytest.mark.parametrize(
    "response, choice",
    [
        ("The correct answer is (B)", "B"),
        ("**The correct answer is (C)**", "C"),
        ("The correct answer is D.", "D"),
        ("I think it is B", None),
        ("The correct answer is (E)", None),
    ],
)
def test_longbench_v2_extract_choice(response, choice):
    assert lb2.extract_choice(response) == choice


V2_ITEMS = [
    lb2.JudgedAnswer("easy", "short", "A", "A"),
    lb2.JudgedAnswer("hard", "medium", "B", None),  # invalid
    lb2.JudgedAnswer("hard", "long", "C", None, failed=True),  # failed call
    lb2.JudgedAnswer("hard", "odd", "D", "D"),  # unknown length counts as long
]


@pytest.mark.parametrize(
    "options, expected",
    [
        (
            {},
            {
                "overall": 50.0,
                "easy": 100.0,
                "hard": 33.3,
                "short": 100.0,
                "medium": 0.0,
                "long": 50.0,
                "n": 4,
            },
        ),
        ({"compensated": True}, {"overall": 62.5, "hard": 50.0, "medium": 25.0, "long": 62.5}),
        ({"drop_failed": True}, {"overall": 66.7, "hard": 50.0, "long": 100.0, "n": 3}),
    ],
)
def test_longbench_v2_accuracy_table(options, expected):
    table = lb2.accuracy_table(V2_ITEMS, **options)
    assert {k: table[k] for k in expected} == expected


@pytest.mark.parametrize(
    "pred, gold, keywords, expected",
    [
        (
            "He was born in Paris",
            "Paris, France",
            "Paris",
            2 * 0.2 * 0.5 / 0.7,
        ),  # gate passed, plain F1
        (
            "It was in France",
            "Paris France",
            "born in Paris",
            0.0,
        ),  # only "in" overlaps: blacklisted -> 0 < 0.2
        (
            "France",
            "France",
            "of France and Spain",
            1.0,
        ),  # recall 1/4 = 0.25 >= 0.2 (blacklist in denominator)
        ("France", "France", None, 1.0),  # no keywords, no gate
        (
            "France Spain Italy Greece",
            "France",
            "France Spain Italy Greece Malta",
            0.4,
        ),  # recall 0.8, F1 2*.25/1.25
    ],
)
def test_lveval_qa_f1_gated_english(pred, gold, keywords, expected):
    assert lv.qa_f1_gated(pred, gold, keywords=keywords) == pytest.approx(expected)


@pytest.mark.parametrize(
    "pred, gold, keywords, expected",
    [
        ("北京", "北京", "北京 上海", 1.0),  # recall 1/2 >= 0.4
        (
            "北京",
            "北京",
            "北京 上海 广州",
            0.0,
        ),  # recall 1/3 < 0.4 (would pass the English 0.2 gate)
        (
            "北京",
            "北京 上海 广州 深圳",
            None,
            0.0,
        ),  # gold is the keyword set: 1/4 < 0.4, plain F1 would be 0.4
        ("北京 上海", "北京 上海", None, 1.0),
    ],
)
def test_lveval_qa_f1_gated_chinese(pred, gold, keywords, expected):
    assert lv.qa_f1_zh_gated(pred, gold, keywords=keywords) == pytest.approx(expected)


def test_lveval_rouge_blacklist_drops_function_words():
    # 的 is blacklisted: 北京 天气 vs 北京 天气 -> 1.0 (rouge_l_zh without blacklist gives 0.8)
    assert lv.rouge_zh_blacklist("北京的天气", "北京天气") == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize(
    "dataset, pred, answers, keywords, all_answers, expected",
    [
        (
            "loogle_SD_mixup",
            "London",
            ["Paris", "London"],
            None,
            False,
            0.0,
        ),  # official: answers[0] only
        (
            "loogle_SD_mixup",
            "London",
            ["Paris", "London"],
            None,
            True,
            1.0,
        ),  # fixed: max over golds
        (
            "factrecall_en",
            "David Beckham",
            ["Beckham"],
            "zzz",
            False,
            2 / 3,
        ),  # plain F1, keywords ignored
    ],
)
def test_lveval_score_item(dataset, pred, answers, keywords, all_answers, expected):
    assert lv.score_item(
        dataset, pred, answers, keywords, all_answers=all_answers
    ) == pytest.approx(expected)


def test_lveval_word_lists_have_official_sizes():
    assert (len(lv.ABANDON_WORDS_EN), len(lv.ABANDON_WORDS_ZH)) == (38, 85)


@pytest.mark.parametrize(
    "reply, rating",
    [
        ("Evaluation evidence: fine.\nRating: [[85]]", 85.0),
        ("Rating: [85]", 85.0),
        ("[[100]] then [[50]]", 100.0),
        ("Rating: [[7.5]]", 7.5),
        ("Rating: 85", None),
        (None, None),
    ],
)
def test_loong_parse_rating(reply, rating):
    assert loong.parse_rating(reply) == rating


def test_loong_stats_exclude_unparsed_from_average():
    stats = loong.loong_stats([100, 50, None, 100])
    assert (stats.n, stats.n_effective, stats.avg_score, stats.perfect_rate) == (
        4,
        3,
        83.33,
        0.6667,
    )
    assert (stats.parse_success_rate, stats.avg_score_unparsed_as_zero) == (0.75, 62.5)


@pytest.mark.parametrize(
    "doc_type, expected",
    [
        ("financial", "Q: Who? / Be brief."),
        ("paper", "{docs}Q: Who? / Be brief."),
    ],  # paper keeps {docs}
)
def test_loong_judge_question(doc_type, expected):
    assert (
        loong.judge_question("{docs}Q: {question} / {instruction}", "Who?", "Be brief.", doc_type)
        == expected
    )


def test_loong_judge_prompt_fills_three_slots():
    text = loong.judge_prompt("Q?", "gold {x}", "pred")
    assert "[Question]\nQ?\n\n[Gold Answer]\ngold {x}\n" in text and text.endswith(
        "Now, start your evaluation:"
    )


@pytest.mark.parametrize(
    "response, answer",
    [
        ("Reasoning...\nThe answer is: 12.34%\n", "12.34%"),
        ('The answer is: ["A"] done', '["A"] done'),  # to the end of the line
        ("  42  ", "42"),  # no marker: the whole response
    ],
)
def test_corpusqa_extract_answer(response, answer):
    assert cq.extract_answer(response) == answer


@pytest.mark.parametrize(
    "reply, correct",
    [
        ("Same value. [[YES]]", True),
        ("[[YES]] ... actually [[NO]]", False),
        ("yes", False),
        (None, False),
        ("[[NO]]", False),
    ],
)
def test_corpusqa_judge_verdict(reply, correct):
    assert cq.judge_verdict(reply) is correct


@pytest.mark.parametrize(
    "predicted, gold, same",
    [
        ("1234567.9", "1234567.89", True),  # within the rounding of the less precise
        ("1,234,567.89", "1234567.89", True),
        ("$1234567.89", "1234567.89", True),
        ("12", "12.34", False),  # rounding tolerance 0.5 but 2.8% apart
        ("12.35", "12.34", False),
        ("12.34%", "12.34%", True),
        ("12.34%", "0.1234", True),
        ("12.34%", "12.35%", False),
        (
            '["NETFLIX INC", "H&R BLOCK INC"]',
            "['h&r block inc', 'netflix inc']",
            True,
        ),  # sets, case-insensitive
        ('["A", "B"]', '["A"]', False),
        ("[]", "[]", True),
        ("[]", '["A"]', False),
        ('"South"', '["South"]', True),  # scalar vs one-element list
        ('"South"', "South.", True),
        ("2024-03", "2024-03", True),
        ("North", "South", False),
        ("[1.5, 2]", '["1.50", "2.00"]', True),
    ],
)
def test_equivalence_checker(predicted, gold, same):
    assert equivalent(predicted, gold) is same


def test_metric_registry_suggests_names():
    with pytest.raises(KeyError, match="qa_f1"):
        METRICS.get("qa_f")
