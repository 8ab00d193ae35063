"""The Plan and Map calls' functions (OpenAI format) and their validators, and a table schema as
prompt text.

The table schema itself is :class:`longctx.memory.records.schema.TableSchema` (the store's); here is
what the model is told about it. The extraction function's JSON schema is generated from the
same description as the pydantic validator of its arguments (:func:`records_model`), so what
the model is told and what is checked cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from longctx.graphs.plugin.api import SQL_TYPES, TableSchema

# -- the Plan function --------------------------------------------------------------------
_ATTRIBUTE_JSON = {
    "type": "object",
    "properties": {
        "name": {
            "type": "string",
            "description": "Column name in snake_case, e.g. revenue, net_income, sector.",
        },
        "type": {
            "type": "string",
            "enum": list(SQL_TYPES),
            "description": "number, integer, percent, text, boolean or date.",
        },
        "unit": {
            "type": "string",
            "description": (
                "Unit of every stored value, e.g. 'USD million', '%', 'count', 'NOK billion'; "
                "empty for text."
            ),
        },
        "description": {
            "type": "string",
            "description": "What the value means, as the documents would state it.",
        },
        "static": {
            "type": "boolean",
            "description": (
                "True when the value does not change over time (e.g. sector, headquarters)."
            ),
        },
    },
    "required": ["name", "type", "unit", "description", "static"],
    "additionalProperties": False,
}

#: The Plan call's function: one table for the question.
SCHEMA_FUNCTION: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "define_table",
        "description": (
            "Define the table that, filled with one row per entity (and period) from every "
            "document, answers the question by SQL."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "table": {"type": "string", "description": "Table name in snake_case."},
                "entity": {
                    "type": "string",
                    "description": (
                        "Column naming the entity each row is about (e.g. company, university)."
                    ),
                },
                "entity_description": {"type": "string", "description": "What an entity is."},
                "time": {
                    "type": ["object", "null"],
                    "description": (
                        "The time dimension (e.g. fiscal_year) when values are reported per "
                        "period; null when they are not."
                    ),
                    "properties": {
                        "name": {"type": "string"},
                        "type": {"type": "string", "enum": ["year", "date", "text"]},
                        "description": {"type": "string"},
                    },
                    "required": ["name", "type", "description"],
                    "additionalProperties": False,
                },
                "attributes": {
                    "type": "array",
                    "items": _ATTRIBUTE_JSON,
                    "description": "The values the question needs, one column each.",
                },
            },
            "required": ["table", "entity", "entity_description", "time", "attributes"],
            "additionalProperties": False,
        },
    },
}


# -- the Map function ---------------------------------------------------------------------
class Cell(BaseModel):
    """One extracted value as written in the document, and the sentence or table row it is from."""

    model_config = ConfigDict(extra="forbid")
    value: str | int | float | bool | None
    quote: str = ""


def records_model(schema: TableSchema) -> type[BaseModel]:
    """The validator of the extraction function's arguments: ``{"records": [...]}``; unknown
    attributes are errors (the model is told which exist)."""
    cells: dict[str, Any] = {a.name: (Cell | None, None) for a in schema.attributes}
    values = create_model("Values", __config__=ConfigDict(extra="forbid"), **cells)
    record = create_model(
        "Record",
        __config__=ConfigDict(extra="forbid"),
        entity=(str, Field(min_length=1)),
        period=(str | int | None, None),
        values=(values, ...),
    )
    records = (list[record], ...)  # type: ignore[valid-type]  # a model built at run time
    return create_model("Records", __config__=ConfigDict(extra="forbid"), records=records)


def records_function(schema: TableSchema) -> dict[str, Any]:
    """The extraction function (OpenAI format): zero or more records, each value with its quote."""
    cell = {
        "type": ["object", "null"],
        "properties": {
            "value": {
                "type": ["string", "null"],
                "description": (
                    "The value exactly as written, with its unit or scale (e.g. '$12.3 million', "
                    "'45.2%', 'Europe')."
                ),
            },
            "quote": {
                "type": "string",
                "description": (
                    "The sentence or table row of the document that states the value, copied "
                    "verbatim."
                ),
            },
        },
        "required": ["value", "quote"],
        "additionalProperties": False,
    }
    values = {
        a.name: {
            **cell,
            "description": f"{a.description or a.name} ({a.type}{', ' + a.unit if a.unit else ''})",
        }
        for a in schema.attributes
    }
    period = {
        "type": ["string", "null"],
        "description": (schema.time.description or schema.time.name)
        if schema.time
        else "Always null: the table has no time dimension.",
    }
    record = {
        "type": "object",
        "properties": {
            "entity": {
                "type": "string",
                "description": schema.entity_description
                or f"The {schema.entity} the values are about.",
            },
            "period": period,
            "values": {"type": "object", "properties": values, "additionalProperties": False},
        },
        "required": ["entity", "period", "values"],
        "additionalProperties": False,
    }
    return {
        "type": "function",
        "function": {
            "name": "record_rows",
            "description": (
                "Record every row of the table that this document states (an empty list when it "
                "states none)."
            ),
            "parameters": {
                "type": "object",
                "properties": {"records": {"type": "array", "items": record}},
                "required": ["records"],
                "additionalProperties": False,
            },
        },
    }


def describe(schema: TableSchema) -> str:
    """The schema as prompt text: one line per column with type, unit and meaning."""
    lines = [f"- {schema.entity} (text): {schema.entity_description or 'the entity'}"]
    if schema.time:
        lines.append(
            f"- {schema.time.name} ({schema.time.type}): {schema.time.description or 'the period'}"
        )
    for a in schema.attributes:
        extra = ", does not change over time" if a.static else ""
        lines.append(
            f"- {a.name} ({a.type}{', ' + a.unit if a.unit else ''}{extra}): "
            f"{a.description or a.name}"
        )
    return "\n".join(lines)


def summary(schema: TableSchema) -> str:
    """One line naming a table's row, period and columns (type, unit): what a planner reuses."""
    period = f" and {schema.time.name} ({schema.time.type})" if schema.time else ""
    columns = ", ".join(
        f"{a.name} ({a.type}{', ' + a.unit if a.unit else ''}{', static' if a.static else ''})"
        for a in schema.attributes
    )
    return f"- {schema.table}: one row per {schema.entity}{period}; columns: {columns}"


__all__ = ["SCHEMA_FUNCTION", "Cell", "describe", "records_function", "records_model", "summary"]
