"""The words a table or column name may not be: SQLite's keywords, the words the SQL filter refuses
and SQLite's reserved ``sqlite_`` prefix.

A column named ``transaction`` or ``in`` makes every query over it a syntax error, and a
column named ``export`` or ``load`` makes every query naming it refused by the text filter
(:data:`FORBIDDEN`); both were accepted as names (issue 27, item 7). :func:`identifier`
in :mod:`longctx.memory.records.schema` renames such a name when the schema is made.

The keyword list is the one of the SQLite library the ``sqlite3`` module runs on, read with
``sqlite3_keyword_count``/``sqlite3_keyword_name`` (Python's ``sqlite3`` does not wrap
them) when that library exports them, else :data:`SQLITE_KEYWORDS`: the 147 keywords of
SQLite 3.40, from its documentation page "SQL As Understood By SQLite: SQLite Keywords"
(lang_keywords.html). A test checks that the constant equals the library's list.
"""

from __future__ import annotations

import ctypes
import functools
import re

#: SQLite's keywords (3.40, lang_keywords.html), upper case as the page lists them.
SQLITE_KEYWORDS = frozenset(
    """
ABORT ACTION ADD AFTER ALL ALTER ALWAYS ANALYZE AND AS ASC ATTACH AUTOINCREMENT BEFORE BEGIN BETWEEN
BY CASCADE CASE CAST CHECK COLLATE COLUMN COMMIT CONFLICT CONSTRAINT CREATE CROSS CURRENT
CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP DATABASE DEFAULT DEFERRABLE DEFERRED DELETE DESC DETACH
DISTINCT DO DROP EACH ELSE END ESCAPE EXCEPT EXCLUDE EXCLUSIVE EXISTS EXPLAIN FAIL FILTER FIRST
FOLLOWING FOR FOREIGN FROM FULL GENERATED GLOB GROUP GROUPS HAVING IF IGNORE IMMEDIATE IN INDEX
INDEXED INITIALLY INNER INSERT INSTEAD INTERSECT INTO IS ISNULL JOIN KEY LAST LEFT LIKE LIMIT MATCH
MATERIALIZED NATURAL NO NOT NOTHING NOTNULL NULL NULLS OF OFFSET ON OR ORDER OTHERS OUTER OVER
PARTITION PLAN PRAGMA PRECEDING PRIMARY QUERY RAISE RANGE RECURSIVE REFERENCES REGEXP REINDEX
RELEASE RENAME REPLACE RESTRICT RETURNING RIGHT ROLLBACK ROW ROWS SAVEPOINT SELECT SET TABLE TEMP
TEMPORARY THEN TIES TO TRANSACTION TRIGGER UNBOUNDED UNION UNIQUE UPDATE USING VACUUM VALUES VIEW
VIRTUAL WHEN WHERE WINDOW WITH WITHOUT
""".split()
)

#: Words refused before a query reaches the engine (file or network access, other databases).
FORBIDDEN = re.compile(
    r"\b(attach|detach|copy|pragma|vacuum|load_extension|readfile|writefile|edit|fts3_tokenizer"
    r"|zipfile|sqlar\w*|read_\w+|load|install|export|import|http\w*|s3|glob_files)\b\s*(\(|\s|$)"
    r"|file:|https?://",
    re.I,
)


def library_keywords() -> frozenset[str] | None:
    """The keywords of the SQLite library ``sqlite3`` is linked to, or None when it cannot be asked
    (a statically linked build, a library without the keyword interface)."""
    try:
        import _sqlite3

        lib = ctypes.CDLL(_sqlite3.__file__)
        count, name = lib.sqlite3_keyword_count, lib.sqlite3_keyword_name
    except (ImportError, OSError, AttributeError):
        return None
    name.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int)]
    words = set()
    for i in range(count()):
        text, size = ctypes.c_char_p(), ctypes.c_int()
        if name(i, ctypes.byref(text), ctypes.byref(size)) != 0:
            return None
        words.add(ctypes.string_at(text, size.value).decode("ascii").upper())
    return frozenset(words)


@functools.lru_cache(maxsize=1)
def keywords() -> frozenset[str]:
    """SQLite's keywords, upper case: the library's own list joined with :data:`SQLITE_KEYWORDS`."""
    return SQLITE_KEYWORDS | (library_keywords() or frozenset())


def refused_name(name: str) -> str | None:
    """Why ``name`` cannot be a table or column name as written (a keyword, a word the filter
    refuses), or None when it can."""
    if name.upper() in keywords():
        return f"{name!r} is an SQLite keyword"
    if name.lower().startswith("sqlite_"):
        return f"{name!r} starts with 'sqlite_', which SQLite reserves for its own tables"
    if FORBIDDEN.search(name):
        return f"{name!r} is refused by the SQL filter (file, network or settings word)"
    return None


__all__ = ["FORBIDDEN", "SQLITE_KEYWORDS", "keywords", "library_keywords", "refused_name"]
