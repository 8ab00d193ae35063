"""The text of model-written SQL: cut into code, strings and comments, taken from a reply, refused
unless it is one SELECT without file or network access.

The check reads the statement's text before the engine sees it; the engine's authorizer
(:mod:`longctx.memory.records.database`) refuses the same things again by what the statement does.
"""

from __future__ import annotations

import re

from longctx.memory.records.sql_words import FORBIDDEN


class QueryRefused(ValueError):
    """SQL that is not one read-only SELECT over the table (file, network, attach, write...)."""


_MAKERS = re.compile(r"\b(randomblob|zeroblob)\s*\(", re.I)


def sql_spans(sql: str) -> list[tuple[str, int, int]]:
    """``sql`` cut into ``("code" | "string" | "identifier" | "comment", start, end)`` spans.

    Strings are ``'...'`` (``''`` inside), quoted identifiers ``"..."`` (``""`` inside),
    ``[...]`` and `` `...` ``; comments ``--`` to the end of the line and ``/* ... */`` (an
    unclosed one runs to the end), recognised only outside strings and identifiers.
    """
    spans: list[tuple[str, int, int]] = []
    i, n, code = 0, len(sql), 0
    while i < n:
        ch = sql[i]
        if ch in "'\"`[":
            close = "]" if ch == "[" else ch
            j = i + 1
            while j < n:
                if sql[j] == close:
                    # a doubled quote stays inside
                    if close != "]" and j + 1 < n and sql[j + 1] == close:
                        j += 2
                        continue
                    break
                j += 1
            end = min(j + 1, n)
            kind = "string" if ch == "'" else "identifier"
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            end, kind = (n if j < 0 else j), "comment"
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            end, kind = (n if j < 0 else j + 2), "comment"
        else:
            i += 1
            continue
        if code < i:
            spans.append(("code", code, i))
        spans.append((kind, i, end))
        i = code = end
    if code < n:
        spans.append(("code", code, n))
    return spans


def _blank(sql: str, kinds: set[str], fill: str = " ") -> str:
    """``sql`` with the spans of ``kinds`` overwritten by ``fill``, every offset kept."""
    return "".join(fill * (b - a) if kind in kinds else sql[a:b] for kind, a, b in sql_spans(sql))


def clean_sql(text: str) -> str:
    """The SQL of a reply: the first fenced block (or the whole text), comments and a trailing ``;``
    removed; ``--`` or ``/*`` inside a string (``WHERE company = 'C1--x'``) is text, not a
    comment."""
    m = re.search(r"```(?:sql|sqlite)?\s*(.*?)```", text, re.S | re.I)
    sql = m.group(1) if m else text
    sql = "".join(" " if kind == "comment" else sql[a:b] for kind, a, b in sql_spans(sql))
    sql = sql.strip().rstrip(";").strip()
    start = re.search(r"\b(with|select)\b", _blank(sql, {"string", "identifier"}), re.I)
    return sql[start.start() :] if start else sql


def check_sql(sql: str) -> None:
    """Refuse anything but one SELECT (or WITH ... SELECT) statement without file or network access.

    Raises:
        QueryRefused: with the reason, which goes back to the model.
    """
    if not sql:
        raise QueryRefused("the reply holds no SQL statement")
    if not re.match(r"(with|select)\b", sql, re.I):
        raise QueryRefused("only one SELECT statement (optionally starting with WITH) is allowed")
    # string literals are data; identifiers and comments stay visible to the checks
    code = _blank(sql, {"string"})
    if ";" in code:
        raise QueryRefused("only one statement is allowed (no ';' inside)")
    m = FORBIDDEN.search(code)
    if m:
        raise QueryRefused(
            f"'{m.group(1) or m.group(0)}' is not allowed: the query may read the table only (no "
            "files, network, other databases or settings)"
        )
    m = _MAKERS.search(code)
    if m:
        raise QueryRefused(f"'{m.group(1)}' is not allowed: it makes values, it reads none")


__all__ = ["FORBIDDEN", "QueryRefused", "check_sql", "clean_sql", "sql_spans"]
