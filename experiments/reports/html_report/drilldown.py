"""The per-question drill-down: for every question (answered or not) its text, choices and gold
answers, and each strategy's answer with its score, cost, usage, prompt, evidence and steps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from longctx.agents.jsonsafe import dumps
from longctx.experiments.planning.prices import row_cost
from longctx.experiments.reports.html_report.cells import anchor, e, number, swatch, usd
from longctx.experiments.reports.html_report.costs import row_model
from longctx.experiments.reports.html_report.steps import steps_details
from longctx.experiments.reports.plots import strategy_color
from longctx.graphs.plugin.presentation import text as cut

#: A strategy's answers to one question: strategy -> (its row, the scorer's value).
Answers = Mapping[str, tuple[dict[str, Any], Any]]


def drilldown_section(
    per_strategy: Mapping[str, Mapping[str, Any]],
    samples: Mapping[str, Any],
    costs: Mapping[str, Any],
    manifest: Mapping[str, Any],
) -> str:
    """Every question of the run (the samples' order, then any answered question not among
    them), collapsed."""
    answers: dict[str, dict[str, tuple[dict[str, Any], Any]]] = {}
    for name, data in per_strategy.items():
        for row, value in data["per_sample"]:
            answers.setdefault(row["sample_id"], {})[name] = (row, value)
    order = list(samples) + [
        sid for sid in answers if sid not in samples
    ]  # every question, answered or not
    blocks = [
        question_details(
            sid, samples.get(sid), answers.get(sid, {}), costs, manifest, list(per_strategy)
        )
        for sid in order
    ]
    return (
        '<section id="questions"><h2>Questions</h2><p class="note">Click a question to see each '
        "strategy's answer, evidence and steps.</p>"
        '<div class="tools"><input id="filter" type="search" placeholder="filter questions" '
        'aria-label="filter questions">'
        '<button type="button" id="expand">expand all</button><button type="button" '
        'id="collapse">collapse all</button></div>'
        f"{''.join(blocks)}</section>"
    )


def question_details(
    sample_id: str,
    sample: Any,
    answers: Answers,
    costs: Mapping[str, Any],
    manifest: Mapping[str, Any],
    strategies: Sequence[str] = (),
) -> str:
    """One question's drill-down: its score badges, text, gold answers, and each strategy's answer
    (a strategy of ``strategies`` without a row says it has not answered)."""
    question = getattr(sample, "question", None)
    first = next(iter(answers.values()), ({}, None))[0]
    text = getattr(question, "text", None) or first.get("metadata", {}).get("question") or sample_id
    missing = [n for n in strategies if n not in answers]
    blocks = "".join(
        answer_details(n, row, v, costs[n], manifest) for n, (row, v) in answers.items()
    ) + "".join(
        f'<details class="answer missing" data-strategy="{e(n)}"><summary>{swatch(n)} <span '
        'class="na">not answered yet</span></summary>'
        '<p class="na">This strategy has no row for this question: the run was interrupted or is '
        "still going.</p></details>"
        for n in missing
    )
    facts = _question_facts(sample_id, sample, question, text)
    return (
        f'<details class="question" id="{e(anchor(sample_id))}" '
        f'data-sample="{e(sample_id)}"><summary><span class="qtext">{cut(text, 300)}</span>'
        f'<span class="badges">{_badges(answers, missing)}</span></summary>{facts}'
        f'<div class="answers">{blocks}</div></details>'
    )


def _badges(answers: Answers, missing: Sequence[str]) -> str:
    """Each strategy's score on the question's summary line, and a badge per strategy that has
    not answered."""
    return "".join(
        f'<span class="badge" style="border-color:{e(strategy_color(n))}" title="{e(n)}">{e(n)}: '
        f"{_score(v, row)}</span>"
        for n, (row, v) in answers.items()
    ) + "".join(
        f'<span class="badge missing" title="{e(n)}">{e(n)}: <span class="na">not '
        "answered</span></span>"
        for n in missing
    )


def _question_facts(sample_id: str, sample: Any, question: Any, text: str) -> str:
    """The question, its choices, its gold answers and where it comes from."""
    gold = [str(a) for a in (getattr(sample, "answers", None) or ())]
    choices = getattr(question, "choices", None) or {}
    choice_html = "".join(f"<li><b>{e(k)}</b> {e(v)}</li>" for k, v in choices.items())
    info = [f'<p class="q"><b>Question</b> <span class="qtext">{cut(text)}</span></p>']
    if choice_html:
        info.append(f'<ul class="choices">{choice_html}</ul>')
    info.append(
        '<p class="gold"><b>Gold answer</b> '
        f"{' | '.join(f'<span>{cut(g, 1000)}</span>' for g in gold)}</p>"
        if gold
        else '<p class="gold"><b>Gold answer</b> <span class="na">none: unscored</span></p>'
    )
    info.append(f'<p class="meta">id {e(sample_id)}{_sample_meta(sample)}</p>')
    return "".join(info)


def _sample_meta(sample: Any) -> str:
    if sample is None:
        return ""
    bits = [f"{k} {v}" for k, v in (("dataset", getattr(sample, "dataset", None)),) if v]
    corpus = getattr(sample, "corpus", None)
    if corpus is not None:
        bits.append(
            f"corpus {getattr(corpus, 'num_tokens', '?'):,} tokens in "
            f"{len(getattr(corpus, 'documents', ()) or ())} documents"
        )
    return "".join(f" · {e(b)}" for b in bits)


def _score(value: Any, row: Mapping[str, Any]) -> str:
    if row.get("status") != "ok":
        return '<span class="fail">failed</span>'
    if not isinstance(value, (int, float)):
        return '<span class="na">unscored</span>'
    return f'<span class="score">{e(number(float(value), 1))}</span>'


def answer_details(
    name: str,
    row: Mapping[str, Any],
    value: Any,
    cost: Mapping[str, Any],
    manifest: Mapping[str, Any],
) -> str:
    """One strategy's answer to a question (a failed one's error and traceback), collapsed under its
    score and cost."""
    model = row_model(row, manifest) or "unknown"
    price = row_cost(row, cost["prices"].get(model), cost.get("table"))
    head = (
        f'<summary>{swatch(name)} <span class="sc">score '
        f"{_score(value, row)}</span>{_rule(row, value)} "
        f'<span class="cost">{usd(price) if row.get("status") == "ok" else ""}</span></summary>'
    )
    if row.get("status") != "ok":
        body = (
            f'<p class="fail"><b>Failed</b>: {cut(row.get("error"))}</p>'
            '<details class="tb"><summary>traceback</summary>'
            f"<pre>{cut(row.get('traceback'))}</pre></details>"
        )
        return f'<details class="answer" data-strategy="{e(name)}">{head}{body}</details>'
    return (
        '<details class="answer" '
        f'data-strategy="{e(name)}">{head}{_answer_body(name, row, model)}</details>'
    )


def _answer_body(name: str, row: Mapping[str, Any], model: str) -> str:
    """An answered row: the answer (and the scored reply where it differs), usage, context cut,
    prompt, evidence and steps."""
    usage = row.get("usage") or {}
    facts = (
        f"{e(number(usage.get('llm_calls')))} calls · {e(number(usage.get('prompt_tokens')))} "
        "prompt + "
        f"{e(number(usage.get('completion_tokens')))} completion "
        f"tokens{' (estimated)' if usage.get('estimated') else ''} · "
        f"{e(number(row.get('seconds')))} s · model {e(model)}"
    )
    if usage.get("rerank_calls") or usage.get("rerank_failed_calls"):
        failed = (
            f" ({e(number(usage.get('rerank_failed_calls')))} failed)"
            if usage.get("rerank_failed_calls")
            else ""
        )
        facts += (
            f" · {e(number(usage.get('rerank_calls')))} rerank calls{failed}, "
            f"{e(number(usage.get('rerank_tokens')))} tokens"
        )
    prediction = row.get("prediction")
    parts = [
        f'<div class="reply"><b>Answer</b><pre class="ans">{cut(row.get("answer"))}</pre></div>'
    ]
    if prediction is not None and prediction != row.get("answer"):
        parts.append(f'<div class="reply"><b>Scored reply</b><pre>{cut(prediction)}</pre></div>')
    parts.append(f'<p class="usage">{facts}</p>')
    parts.append(_context_cut(row))
    parts.append(_messages(row.get("messages") or []))
    evidence = row.get("evidence") or []
    parts.append(_evidence(evidence))
    parts.append(steps_details(name, row.get("steps") or [], evidence))
    return "".join(parts)


def _context_cut(row: Mapping[str, Any]) -> str:
    """How much of the corpus a full-context prompt kept: the prompt tokens sent
    against the corpus."""
    built = next((st for st in row.get("steps") or [] if "truncated" in st), None)
    if built is None:
        return ""
    sent = (row.get("usage") or {}).get("prompt_tokens")
    corpus = row.get("corpus_tokens")
    if not built.get("truncated"):
        return (
            f'<p class="cut">Context: the whole corpus ({e(number(corpus))} tokens) fitted in '
            "the prompt.</p>"
        )
    cut = (
        f" (about {number(max(0, corpus - sent))} cut from the middle)"
        if isinstance(corpus, int) and isinstance(sent, int)
        else ""
    )
    return (
        f'<p class="cut"><b>Context cut</b>: {e(number(sent))} prompt tokens sent of a '
        f"{e(number(corpus))}-token corpus{e(cut)}; "
        f"input budget {e(number(built.get('max_input_tokens')))} tokens of a "
        f"{e(number(built.get('context_window')))}-token window.</p>"
    )


def _messages(messages: Sequence[Mapping[str, Any]]) -> str:
    """The last model call's messages, collapsed: the exact prompt behind the answer (an agent's
    tool calls and the results it read included)."""
    if not messages:
        return ""
    body = "".join(
        f'<div class="msg"><div class="role">{e(_role(m))}</div>{_tool_calls(m)}{_content(m)}</div>'
        for m in messages
    )
    size = sum(len(str(m.get("content") or "")) for m in messages)
    return (
        f'<details class="messages"><summary>Messages sent (last model call, {len(messages)} '
        f"message(s), {size:,} characters)</summary>{body}</details>"
    )


def _content(message: Mapping[str, Any]) -> str:
    """A message's text (none shown for a turn that only called tools)."""
    if message.get("tool_calls") and not message.get("content"):
        return ""
    return f"<pre>{cut(message.get('content'), 30_000)}</pre>"


def _role(message: Mapping[str, Any]) -> str:
    """A message's role, a tool result's with the call it answers (and its error status)."""
    if message.get("role") != "tool":
        return str(message.get("role"))
    status = " (error)" if message.get("status") == "error" else ""
    return f"tool result: {message.get('name')} [{message.get('tool_call_id')}]{status}"


def _tool_calls(message: Mapping[str, Any]) -> str:
    """The tool calls an assistant turn made, one line each: name, id and JSON arguments."""
    calls = message.get("tool_calls") or []
    items = "".join(
        f'<li class="tool-call" data-call="{e(c.get("id"))}"><b>{e(c.get("name"))}</b> '
        f'<span class="meta">[{e(c.get("id"))}]</span> '
        f"<code>{cut(dumps(c.get('args')), 2000)}</code></li>"
        for c in calls
    )
    return f'<ul class="tool-calls">{items}</ul>' if items else ""


def _rule(row: Mapping[str, Any], value: Any) -> str:
    """Why the answer counted (or not), where the scorer says: exact, typed, phrase, judge."""
    if "match_rule" not in row or row.get("status") != "ok" or not isinstance(value, (int, float)):
        return ""
    rule = row["match_rule"]
    label = f"matched: {rule}" if rule else "no rule matched"
    return (
        f' <span class="rule" data-rule="{e(rule or "none")}" title="the scoring rule that '
        f'decided this answer">{e(label)}</span>'
    )


def _evidence(evidence: Sequence[Mapping[str, Any]]) -> str:
    if not evidence:
        return (
            '<div class="evidence"><b>Evidence</b> '
            '<span class="na">none recorded (no chunks cited: the strategy read the corpus or '
            "its context whole)</span></div>"
        )
    items = "".join(_evidence_item(ev) for ev in evidence)
    return f'<div class="evidence"><b>Evidence</b> ({len(evidence)})<ol>{items}</ol></div>'


def _evidence_item(ev: Mapping[str, Any]) -> str:
    score = ev.get("score")
    scored = " · score " + e(number(score, 3)) if isinstance(score, (int, float)) else ""
    return (
        f'<li><span class="title">{e(ev.get("title") or ev.get("doc_id"))}</span> <span '
        f'class="meta">doc {e(ev.get("doc_id"))}'
        f"{' · chunk ' + e(ev.get('chunk_id')) if ev.get('chunk_id') is not None else ''}"
        f"{scored}</span>"
        f'<blockquote class="snippet">{cut(ev.get("snippet"), 1000)}</blockquote></li>'
    )
