"""The table schema of a records store: the entity key, typed attributes with units, the time
dimension.

A :class:`TableSchema` names what one table holds (what the Plan call of the structured
strategy returns, or a config gives): one row per entity, and per period when there is a
time dimension; ``static`` attributes do not change over time (a sector). Its
:func:`schema_hash` keys the record cache, so one schema serves every question that asks for
the same table. Names are made SQL identifiers here (:func:`identifier`), so every query over
the table can name its columns.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from longctx.memory.records.sql_words import refused_name

AttributeType = Literal["number", "integer", "percent", "text", "boolean", "date"]
#: SQLite column type of each attribute type.
SQL_TYPES = {
    "number": "REAL",
    "integer": "INTEGER",
    "percent": "REAL",
    "text": "TEXT",
    "boolean": "INTEGER",
    "date": "TEXT",
}


def identifier(text: str) -> str:
    """``"Net Income (USD m)"`` -> ``"net_income_usd_m"``: lower snake case, starting with a letter.

    A name SQL cannot use as written (an SQLite keyword such as ``transaction``, a word the
    SQL filter refuses such as ``export``; :mod:`longctx.memory.records.sql_words`) is renamed:
    ``transaction_``, ``export_``, else a prefix: ``c_http``; the model then writes SQL over the new
    name.
    """
    name = re.sub(r"[^0-9a-z]+", "_", str(text).strip().lower()).strip("_")
    if not name:
        raise ValueError(f"{text!r} gives an empty column name")
    if name[0].isdigit():
        name = "c_" + name
    for candidate in (name, name + "_", "c_" + name):
        if refused_name(candidate) is None:
            return candidate
    raise ValueError(
        f"{text!r} cannot be a table or column name: {refused_name(name)}"
    )  # pragma: no cover - a prefix always helps


class _Named(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    @field_validator("name", mode="before", check_fields=False)
    @classmethod
    def _snake(cls, v: Any) -> str:
        return identifier(v)


class Attribute(_Named):
    """One column: name, type, unit (``"USD million"``, ``"%"``, ``"count"``), meaning,
    staticness."""

    name: str
    type: AttributeType = "text"
    unit: str = ""
    description: str = ""
    static: bool = False


class TimeDimension(_Named):
    """The period a value belongs to: ``year`` (stored as an integer), ``date`` (ISO text) or
    ``text``."""

    name: str = "year"
    type: Literal["year", "date", "text"] = "year"
    description: str = ""


class TableSchema(BaseModel):
    """A table for one or several questions: one row per entity (and period, with a time
    dimension)."""

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
        names = (
            [self.entity]
            + ([self.time.name] if self.time else [])
            + [a.name for a in self.attributes]
        )
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"column names must be distinct; repeated: {repeated}")
        return self

    @property
    def columns(self) -> list[str]:
        """The table's columns in order: entity, period (if any), attributes."""
        return (
            [self.entity]
            + ([self.time.name] if self.time else [])
            + [a.name for a in self.attributes]
        )

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
        if (self.entity, self.time and self.time.model_dump()) != (
            other.entity,
            other.time and other.time.model_dump(),
        ):
            return False
        mine = {a.name: (a.type, a.unit.lower(), a.static) for a in self.attributes}
        return all(mine.get(a.name) == (a.type, a.unit.lower(), a.static) for a in other.attributes)


def parse_schema(data: Any, max_attributes: int | None = None) -> TableSchema:
    """A validated schema from tool-call arguments (or a config mapping); extra attributes past
    ``max_attributes`` are an error, so the model is asked again rather than silently cut."""
    schema = TableSchema.model_validate(data)
    if max_attributes is not None and len(schema.attributes) > max_attributes:
        raise ValueError(
            f"at most {max_attributes} attributes, got {len(schema.attributes)}: keep the ones "
            "the question needs"
        )
    return schema


def schema_hash(schema: TableSchema, *salt: Any) -> str:
    """SHA-256 of the canonical schema (and ``salt``: prompt version, window settings)."""
    payload = json.dumps([schema.canonical(), *salt], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


__all__ = [
    "SQL_TYPES",
    "Attribute",
    "AttributeType",
    "TableSchema",
    "TimeDimension",
    "identifier",
    "parse_schema",
    "schema_hash",
]
