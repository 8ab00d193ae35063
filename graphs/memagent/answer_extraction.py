"""What MemAgent's evaluation scores of a final reply: the answer after "the answer is", as its
``extract_answer`` and ``get_pred`` take it."""

from __future__ import annotations

from longctx.graphs.plugin.api import strip_think

#: Special tokens the official ``extract_answer`` removes from the extracted answer (DeepSeek-R1's).
_ANSWER_NOISE = ("<\uff5cAssistant\uff5c>", "<\uff5cend\u2581of\u2581sentence\uff5c>")


def extract_answer(text: str) -> str | None:
    """MemAgent's ``extract_answer``: the text after the last "the answer is" (case-sensitive), with
    ``*`` removed, R1's special tokens removed and spaces and dots stripped; ``None`` without the
    phrase."""
    text = text.replace("*", "")
    if "the answer is" not in text:
        return None
    answer = text.rsplit("the answer is", 1)[-1].strip()
    for token in _ANSWER_NOISE:
        answer = answer.replace(token, "")
    return answer.strip().strip(".").strip()


def official_prediction(reply: str) -> str:
    """What MemAgent's evaluation scores of a final reply (``taskutils/memory_eval/ruler_hqa.py``
    ``get_pred``): the reply stripped, the text after its last ``</think>`` (``extract_solution``),
    then :func:`extract_answer` of that (of the whole reply when nothing follows ``</think>``);
    ``""`` when there is no "the answer is", which the official loop scores 0."""
    response = reply.strip()
    body = strip_think(response).strip()
    return extract_answer(body or response) or ""
