"""Strategies over a corpus that grows: the structured strategy extracts only the new documents."""

import re

from agents import answer
from retrieval import Corpus, Document
from tests.test_structured import DOCS, SCHEMA, scripted


def test_structured_extracts_only_the_documents_added_to_the_corpus(tmp_path):
    titles = list(DOCS)
    old = Corpus.from_texts([DOCS[t] for t in titles[:2]], titles=titles[:2])
    grown = old.add([Document(doc_id="2", text=DOCS[titles[2]], title=titles[2])])
    extracted: list[str] = []

    def model():
        llm = scripted(["SELECT company, fiscal_year, revenue FROM facts ORDER BY company"])
        inner = llm.reply_fn

        def reply(prompt, tools):
            if prompt.startswith("Extract rows"):
                extracted.append(re.search(r"^Document: (.+?)$", prompt, re.M).group(1))
            return inner(prompt, tools)

        llm.reply_fn = reply
        return llm

    answer(old, "What was the revenue of each company?", strategy="structured", llm=model(), cache_dir=tmp_path, schema=SCHEMA)
    assert sorted(extracted) == sorted(titles[:2])
    extracted.clear()
    a = answer(grown, "What was the revenue of each company?", strategy="structured", llm=model(), cache_dir=tmp_path, schema=SCHEMA)
    assert extracted == [titles[2]]  # the two documents read before come from the record cache
    mapped = next(s for s in a.steps if s["node"] == "map")
    assert (mapped["cached"], mapped["to_extract"]) == (2, 1)
    assert next(s for s in a.steps if s["node"] == "query")["rows"][0][2] == 1250.0  # the added restatement wins
