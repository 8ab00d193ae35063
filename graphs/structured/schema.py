"""The table schema (Plan) and the per-document record format (Map), both validated by pydantic.

A :class:`TableSchema` is what the Plan call returns: the entity key, the attributes with
types and units (``static`` ones do not change over time, e.g. a sector), and the time
dimension when there is one. Its :func:`schema_hash` keys the record cache, so one schema
serves every question (and strategy) that asks for the same table.

The extraction function's JSON schema is generated from the same description as the
pydantic validator of its arguments (:func:`records_model`), so what the model is told
and what is checked cannot drift apart.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from graphs.structured.sql_words import refused_name

AttributeType = Literal["number", "integer", "percent", "text", "boolean", "date"]
#: SQLite column type of each attribute type.
SQL_TYPES = {"number": "REAL", "integer": "INTEGER", "percent": "REAL", "text": "TEXT", "boolean": "INTEGER", "date": "TEXT"}


def identifier(text: str) -> str:
    """``"Net Income (USD m)"`` -> ``"net_income_usd_m"``: lower snake case, starting with a letter.

    A name SQL cannot use as written (an SQLite keyword such as ``transaction``, a word the
    SQL filter refuses such as ``export``; :mod:`graphs.structured.sql_words`) is renamed:
    ``transaction_``, ``export_``, else a prefix: ``c_http``; the model then writes SQL over the new name.
    """
    name = re.sub(r"[^0-9a-z]+", "_", str(text).strip().lower()).strip("_")
    if not name:
        raise ValueError(f"{text!r} gives an empty column name")
    if name[0].isdigit():
        name = "c_" + name
    for candidate in (name, name + "_", "c_" + name):
        if refused_name(candidate) is None:
            return candidate
    raise ValueError(f"{text!r} cannot be a table or column name: {refused_name(name)}")  # pragma: no cover - a prefix always helps


class _Named(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    @field_validator("name", mode="before", check_fields=False)
    @classmethod
    def _snake(cls, v: Any) -> str:
        return identifier(v)


class Attribute(_Named):
    """One column: name, type, unit (``"USD million"``, ``"%"``, ``"count"``), meaning, staticness."""

    name: str
    type: AttributeType = "text"
    unit: str = ""
    description: str = ""
    static: bool = False


class TimeDimension(_Named):
    """The period a value belongs to: ``year`` (stored as an integer), ``date`` (ISO text) or ``text``."""

    name: str = "year"
    type: Literal["year", "date", "text"] = "year"
    description: str = ""


class TableSchema(BaseModel):
    """A table for one or several questions: one row per entity (and period, with a time dimension)."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)
    table: str = "facts"
    entity: str = "entity"
    entity_description: str = ""
    time: TimeDimension | None = None
    attributes: list[Attribute] = Field(min_length=1)

    @field_validator("table", "entity", mode="before")
    @classmethod
    def _snake(cls, v: Any) -> str:
        return identifier(v)

    @model_validator(mode="after")
    def _distinct(self) -> TableSchema:
        names = [self.entity] + ([self.time.name] if self.time else []) + [a.name for a in self.attributes]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"column names must be distinct; repeated: {repeated}")
        return self

    @property
    def columns(self) -> list[str]:
        """The table's columns in order: entity, period (if any), attributes."""
        return [self.entity] + ([self.time.name] if self.time else []) + [a.name for a in self.attributes]

    def attribute(self, name: str) -> Attribute:
        """The attribute called ``name``."""
        return next(a for a in self.attributes if a.name == name)

    def canonical(self) -> dict[str, Any]:
        """The schema as plain data with sorted attributes (equal tables give equal dicts)."""
        data = self.model_dump()
        data["attributes"] = sorted(data["attributes"], key=lambda a: a["name"])
        return data

    def covers(self, other: TableSchema) -> bool:
        """Whether this table answers everything ``other`` asks for: same entity and time,
        and every attribute of ``other`` with the same type and unit."""
        if (self.entity, self.time and self.time.model_dump()) != (other.entity, other.time and other.time.model_dump()):
            return False
        mine = {a.name: (a.type, a.unit.lower(), a.static) for a in self.attributes}
        return all(mine.get(a.name) == (a.type, a.unit.lower(), a.static) for a in other.attributes)


def parse_schema(data: Any, max_attributes: int | None = None) -> TableSchema:
    """A validated schema from tool-call arguments (or a config mapping); extra attributes past
    ``max_attributes`` are an error, so the model is asked again rather than silently cut."""
    schema = TableSchema.model_validate(data)
    if max_attributes is not None and len(schema.attributes) > max_attributes:
        raise ValueError(f"at most {max_attributes} attributes, got {len(schema.attributes)}: keep the ones the question needs")
    return schema


def schema_hash(schema: TableSchema, *salt: Any) -> str:
    """SHA-256 of the canonical schema (and ``salt``: prompt version, window settings)."""
    payload = json.dumps([schema.canonical(), *salt], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


# -- the Plan function --------------------------------------------------------------------
_ATTRIBUTE_JSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Column name in snake_case, e.g. revenue, net_income, sector."},
        "type": {"type": "string", "enum": list(SQL_TYPES), "description": "number, integer, percent, text, boolean or date."},
        "unit": {"type": "string", "description": "Unit of every stored value, e.g. 'USD million', '%', 'count', 'NOK billion'; empty for text."},
        "description": {"type": "string", "description": "What the value means, as the documents would state it."},
        "static": {"type": "boolean", "description": "True when the value does not change over time (e.g. sector, headquarters)."},
    },
    "required": ["name", "type", "unit", "description", "static"],
    "additionalProperties": False,
}

#: The Plan call's function: one table for the question.
SCHEMA_FUNCTION: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "define_table",
        "description": "Define the table that, filled with one row per entity (and period) from every document, answers the question by SQL.",
        "parameters": {
            "type": "object",
            "properties": {
                "table": {"type": "string", "description": "Table name in snake_case."},
                "entity": {"type": "string", "description": "Column naming the entity each row is about (e.g. company, university)."},
                "entity_description": {"type": "string", "description": "What an entity is."},
                "time": {
                    "type": ["object", "null"],
                    "description": "The time dimension (e.g. fiscal_year) when values are reported per period; null when they are not.",
                    "properties": {
                        "name": {"type": "string"},
                        "type": {"type": "string", "enum": ["year", "date", "text"]},
                        "description": {"type": "string"},
                    },
                    "required": ["name", "type", "description"],
                    "additionalProperties": False,
                },
                "attributes": {"type": "array", "items": _ATTRIBUTE_JSON, "description": "The values the question needs, one column each."},
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
        "Record", __config__=ConfigDict(extra="forbid"),
        entity=(str, Field(min_length=1)), period=(str | int | None, None), values=(values, ...),
    )
    return create_model("Records", __config__=ConfigDict(extra="forbid"), records=(list[record], ...))  # type: ignore[valid-type]  # a model built at run time


def records_function(schema: TableSchema) -> dict[str, Any]:
    """The extraction function (OpenAI format): zero or more records, each value with its quote."""
    cell = {
        "type": ["object", "null"],
        "properties": {
            "value": {
                "type": ["string", "null"],
                "description": "The value exactly as written, with its unit or scale (e.g. '$12.3 million', '45.2%', 'Europe').",
            },
            "quote": {"type": "string", "description": "The sentence or table row of the document that states the value, copied verbatim."},
        },
        "required": ["value", "quote"],
        "additionalProperties": False,
    }
    values = {a.name: {**cell, "description": f"{a.description or a.name} ({a.type}{', ' + a.unit if a.unit else ''})"} for a in schema.attributes}
    period = {
        "type": ["string", "null"],
        "description": (schema.time.description or schema.time.name) if schema.time else "Always null: the table has no time dimension.",
    }
    record = {
        "type": "object",
        "properties": {
            "entity": {"type": "string", "description": schema.entity_description or f"The {schema.entity} the values are about."},
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
            "description": "Record every row of the table that this document states (an empty list when it states none).",
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
        lines.append(f"- {schema.time.name} ({schema.time.type}): {schema.time.description or 'the period'}")
    for a in schema.attributes:
        extra = ", does not change over time" if a.static else ""
        lines.append(f"- {a.name} ({a.type}{', ' + a.unit if a.unit else ''}{extra}): {a.description or a.name}")
    return "\n".join(lines)


def summary(schema: TableSchema) -> str:
    """One line naming a table's row, period and columns (type, unit): what a planner reuses."""
    period = f" and {schema.time.name} ({schema.time.type})" if schema.time else ""
    columns = ", ".join(f"{a.name} ({a.type}{', ' + a.unit if a.unit else ''}{', static' if a.static else ''})" for a in schema.attributes)
    return f"- {schema.table}: one row per {schema.entity}{period}; columns: {columns}"


__all__ = [
    "Attribute", "Cell", "SCHEMA_FUNCTION", "SQL_TYPES", "TableSchema", "TimeDimension", "describe", "identifier", "summary",
    "parse_schema", "records_function", "records_model", "schema_hash",
]
