"""Strategies over a corpus that grows: the structured strategy extracts only the new documents."""

import pytest

from longctx import answer
from longctx.retrieval import Corpus, Document
from tests.test_structured import DOCS, SCHEMA, recording_extractions


def test_structured_extracts_only_the_documents_added_to_the_corpus(tmp_path):
    titles = list(DOCS)
    old = Corpus.from_texts([DOCS[t] for t in titles[:2]], titles=titles[:2])
    grown = old.add([Document(doc_id="2", text=DOCS[titles[2]], title=titles[2])])
    extracted: list[str] = []

    def model():
        return recording_extractions(extracted)

    answer(
        old,
        "What was the revenue of each company?",
        strategy="structured",
        llm=model(),
        cache_dir=tmp_path,
        schema=SCHEMA,
    )
    assert sorted(extracted) == sorted(titles[:2])
    extracted.clear()
    a = answer(
        grown,
        "What was the revenue of each company?",
        strategy="structured",
        llm=model(),
        cache_dir=tmp_path,
        schema=SCHEMA,
    )
    assert extracted == [titles[2]]  # the two documents read before come from the record cache
    mapped = next(s for s in a.steps if s["node"] == "map")
    assert (mapped["cached"], mapped["to_extract"]) == (2, 1)
    assert (
        next(s for s in a.steps if s["node"] == "query")["rows"][0][2] == 1250.0
    )  # the added restatement wins


@pytest.mark.parametrize("first_run_continues", [False, True])
def test_memagent_continues_a_finished_run_over_the_appended_documents_only(first_run_continues):
    from tests.test_memagent import corpus_of, echo_model, memory_in, section_in

    old = corpus_of([6000, 4000])
    first = echo_model()
    done = answer(
        old,
        "q",
        strategy="memagent",
        llm=first,
        show_progress=False,
        continue_from_prefix=first_run_continues,
    )
    last_memory = f"mem after {section_in(first.calls[-2]['prompt'])[:20]}"
    added = corpus_of([0, 0, 3000]).documents[2]
    grown = old.add([Document(doc_id="added", text=added.text, title="Added")])
    second = echo_model()
    result = answer(
        grown, "q", strategy="memagent", llm=second, show_progress=False, continue_from_prefix=True
    )
    assert len(second.calls) == 2  # one window of the added document, then the final answer
    assert (
        memory_in(second.calls[0]["prompt"]) == last_memory
    )  # the earlier run's final memory carried over
    assert section_in(second.calls[0]["prompt"]).startswith(
        "Document 3: Added"
    )  # numbered as in the whole corpus
    assert result.steps[-1]["continued_from_documents"] == 2 and result.usage.llm_calls == 2
    assert not done.steps[-1].get("continued_from_documents")
    again = echo_model()
    assert (
        answer(
            grown,
            "q",
            strategy="memagent",
            llm=again,
            show_progress=False,
            continue_from_prefix=True,
        ).answer
        == result.answer
    )
    assert again.calls == []  # the continued run is replayed like any finished run
    whole = echo_model()
    answer(
        grown, "q", strategy="memagent", llm=whole, show_progress=False
    )  # the option off: the whole corpus is read
    assert len(whole.calls) > len(first.calls)
