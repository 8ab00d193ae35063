"""Prompts of the structured strategy (ours: CorpusQA, seed 004, describes its pipeline
-- schema extraction per document, one table, NL2SQL -- but publishes no prompt text).
Bump ``PROMPTS_VERSION`` on any edit (the prompt goldens check it), and
``EXTRACT_PROMPTS_VERSION`` on an edit of the ``EXTRACT_*`` templates: that one is part of
the record-cache key, so a change of the other prompts keeps the extracted records."""

from __future__ import annotations

PROMPTS_VERSION = 3  # 2: the plan prompt lists the tables already filled from the corpus (PLAN_KNOWN); 3: EXTRACT_DOCUMENT_FIRST_PROMPT added
EXTRACT_PROMPTS_VERSION = 1

PLAN_PROMPT = """A question will be answered over a large collection of documents by first filling one table from every document, then running SQL over that table.

Question: {question}

Design the table that answers the question: the entity each row is about (e.g. company, university), the time dimension when values are reported per period (e.g. fiscal_year; null when not), and the attributes the question needs, each with its type (number, integer, percent, text, boolean, date) and the unit every value will be stored in (e.g. "USD million", "%", "count"). Include the attributes needed to filter or group (e.g. sector, region) and every value the computation reads; mark attributes that never change over time as static. Use at most {max_attributes} attributes.{known}{how}"""

PLAN_KNOWN = """

Tables already filled from every document of this collection (reusing one reads nothing again; a new table means reading every document again):
{tables}
If one of them holds every value the question needs, define that table again: the same table name, entity, time dimension, and the columns the question needs with the same names, types and units."""

PLAN_JSON = """

Reply with one JSON object only, no other text, of the form:
{{"table": "facts", "entity": "company", "entity_description": "...", "time": {{"name": "fiscal_year", "type": "year", "description": "..."}}, "attributes": [{{"name": "revenue", "type": "number", "unit": "USD million", "description": "...", "static": false}}]}}"""

PLAN_TOOLS = """

Call the function define_table with the table."""

EXTRACT_PROMPT = """Extract rows for the table below from the document. Read the whole text and record every row it states: one record per {entity} and {period}, with each value exactly as written (keep its unit or scale, e.g. "$12.3 million", "12,300,000 USD", "45.2%"; for a table cell, add the unit given in the table's header or caption, e.g. "12,345.6 USD million", and write negatives in parentheses as "-"). Give for every value the quote: the sentence or table row that states it, copied verbatim. Leave out values the document does not state; never compute or guess. A document that states no row gives an empty list. Values restated for an earlier period count as rows of that period.

Table {table}:
{columns}

Document: {title}{part}
<document>
{text}
</document>
{how}"""

#: ``EXTRACT_PROMPT``'s words with the document first (``StructuredConfig.extract_order="document_first"``): every
#: extraction of one document (window) starts alike whatever the table, so a prompt cache serves the document to the
#: later questions that fill another table from it. Its order is part of the record-cache key.
EXTRACT_DOCUMENT_FIRST_PROMPT = """Document: {title}{part}
<document>
{text}
</document>

Extract rows for the table below from the document above. Read the whole text and record every row it states: one record per {entity} and {period}, with each value exactly as written (keep its unit or scale, e.g. "$12.3 million", "12,300,000 USD", "45.2%"; for a table cell, add the unit given in the table's header or caption, e.g. "12,345.6 USD million", and write negatives in parentheses as "-"). Give for every value the quote: the sentence or table row that states it, copied verbatim. Leave out values the document does not state; never compute or guess. A document that states no row gives an empty list. Values restated for an earlier period count as rows of that period.

Table {table}:
{columns}
{how}"""

#: Extraction templates by ``StructuredConfig.extract_order``.
EXTRACT_TEMPLATES = {"table_first": EXTRACT_PROMPT, "document_first": EXTRACT_DOCUMENT_FIRST_PROMPT}

EXTRACT_TOOLS = """Call the function record_rows with the list of records."""

EXTRACT_JSON = """Reply with one JSON object only, no other text, of the form:
{{"records": [{{"entity": "...", "period": {period_example}, "values": {{{value_example}}}}}]}}
Allowed value names: {names}. Use {{"records": []}} when the document states no row."""

SQL_PROMPT = """Every document of a collection was read and its facts were put into one SQLite table. Write the SQL that answers the question.

{create}

Notes: one row per {entity}{per_period}; restated values were resolved ({rule}); a value a document did not state is NULL. Values are numbers in the units shown in brackets.
{samples}{distinct}
Question: {question}

Write one SQLite SELECT statement (WITH is allowed) that computes the answer from table {table}. Reply with the SQL only, in a ```sql block."""

SQL_RETRY = """

Your previous SQL failed:
```sql
{sql}
```
Error: {error}
Write a corrected SQL statement, in a ```sql block."""

ANSWER_PROMPT = """A question about a collection of documents was answered by SQL over a table filled from every document.

Question: {question}

Table {table}:
{columns}

SQL:
```sql
{sql}
```

SQL result ({n_rows} rows{truncated}), as JSON rows [{header}]:
<result>
{result}
</result>

Answer the question from the SQL result only.

{instruction}"""

ANSWER_NO_SQL = """A question about a collection of documents was to be answered by SQL over a table filled from every document, but no query succeeded ({error}). The table's first rows are:

{samples}

Question: {question}

{instruction}"""

DEFAULT_INSTRUCTION = """Give only the answer, with no other words."""
