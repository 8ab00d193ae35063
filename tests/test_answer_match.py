"""The own-corpus answer rule: whole tokens, typed values, no credit inside words, negations
or lists."""

from __future__ import annotations

import pytest

from longctx.experiments.metrics.answer_match import Match, asks_for_list, match_answer, parse_date

Q = "Which group can read /var/log?"

CASES = [
    # (answer, gold, answer_type, question, expected rule or None)
    # -- the three answers
    ('The package "base-passwd-README" is not available.', "adm", None, Q, None),
    ("Ask the administrator.", "adm", None, Q, None),
    ("The adm group can read /var/log.", "adm", None, Q, "phrase"),
    # -- exact after normalisation
    ("adm", "adm", None, Q, "exact"),
    ("The ADM.", "adm", None, Q, "exact"),
    ("  Bergen  ", "bergen", "text", None, "exact"),
    ("1,200", "1200", None, None, "exact"),
    ("The Hague", "Hague", "text", None, "exact"),
    # -- abbreviations and codes inside longer words
    ("admin", "adm", None, Q, None),
    ("Use sudo-adm-tools.", "adm", None, Q, "phrase"),  # a hyphen separates words
    ("IRQ12 is busy.", "12", None, None, None),
    ("It is in the USA.", "US", None, None, None),
    # -- numbers inside longer numbers
    ("In 2012 it started.", "12", None, None, None),
    ("The value is 12.5.", "12", None, None, None),
    ("The value is 12.", "12", None, None, "phrase"),
    ("About 1,200 staff work there.", "1200", None, None, "phrase"),
    ("It is the 12th floor.", "12", None, None, None),
    ("It weighs 12kg.", "12", None, None, "phrase"),
    ("It weighs 12 kg.", "12 kg", None, None, "phrase"),
    ("It weighs 12 lb.", "12 kg", None, None, None),
    # -- negations
    ("Not adm.", "adm", None, Q, None),
    ("The group is not adm.", "adm", None, Q, None),
    ("It is not root but adm.", "adm", None, Q, "phrase"),
    ("No, adm cannot.", "adm", None, Q, None),
    # -- several candidates in one answer
    ("adm, sudo or root", "adm", None, Q, None),
    ("Either adm or sudo.", "adm", None, Q, None),
    ("adm/sudo", "adm", None, Q, None),
    ("root and adm", "adm", None, Q, None),
    ("adm and root", '["adm", "root"]', "list", "Which groups can read /var/log?", "typed"),
    ("adm, root", "adm", None, "List the groups that can read /var/log.", "phrase"),
    ("adm, which is a system group.", "adm", None, Q, "phrase"),
    ("adm and its members can read the logs there.", "adm", None, Q, "phrase"),
    ("Smith and Wesson", "Smith and Wesson", None, None, "exact"),
    ("Smith or Wesson", "Smith and Wesson", None, None, None),
    # -- typed answers
    ("4.70", "4.7", "number", None, "exact"),
    ("NOK 4.7 billion", "4.7", "number", None, None),
    ("43", "42", "number", None, None),
    ("12%", "0.12", "number", None, "typed"),
    ("12 percent", "12%", None, None, "exact"),
    ('["Bergen", "Oslo"]', '["Oslo", "Bergen"]', "list", None, "typed"),
    ("Oslo", '["Oslo", "Bergen"]', "list", None, None),
    ("5 January 2023", "2023-01-05", "date", None, "typed"),
    ("January 5, 2023", "2023-01-05", "date", None, "typed"),
    ("2023年1月5日", "2023-01-05", "date", None, "typed"),
    ("6 January 2023", "2023-01-05", "date", None, None),
    # -- CJK by character
    ("答案是北京。", "北京", None, None, "phrase"),
    ("不是北京", "北京", None, None, None),
    ("上海", "北京", None, None, None),
    ("北京或上海", "北京", None, None, None),
    # -- multi-word phrases
    ("It is Halvorsen Maritime ASA.", "Halvorsen Maritime", None, None, "phrase"),
    ("Maritime Halvorsen", "Halvorsen Maritime", None, None, None),
    ("", "adm", None, Q, None),
]


@pytest.mark.parametrize(("answer", "gold", "kind", "question", "rule"), CASES)
def test_match_answer(answer, gold, kind, question, rule):
    assert match_answer(answer, gold, answer_type=kind, question=question) == Match(
        rule is not None, rule
    )


def test_the_table_is_large():
    assert len(CASES) >= 30


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Which group can read /var/log?", False),
        ("Which groups are allowed to read /var/log?", True),
        ("List the groups.", True),
        ("Name all owners.", True),
        ("Who founded it?", False),
        ("哪些城市?", True),
        ("Which groups can read it?", True),
        ("Which process writes it?", False),
        ("What was the revenue?", False),
    ],
)
def test_asks_for_list(question, expected):
    assert asks_for_list(question) is expected


def test_parse_date_rejects_impossible_days():
    assert parse_date("2023-02-30") is None and parse_date("Smarch 5, 2023") is None


def test_non_strings_are_refused():
    with pytest.raises(TypeError):
        match_answer(None, "x")  # type: ignore[arg-type]
