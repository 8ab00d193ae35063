"""Domain schemas: entities, numeric and categorical fields, custom metrics, value models.

A domain says what a document reports (fields grouped in sections), how values evolve
from year to year, and which derived metrics queries may ask about. Metrics carry an
SQL expression and an independent Python function, so ground truth can be checked by
two paths.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from longctx.experiments.synth import names
from longctx.retrieval.contract import Registry


@dataclass(frozen=True)
class FieldSpec:
    """A numeric field reported once per entity and period.

    Attributes:
        name: Column name in the fact table.
        label: How documents and questions name it ("net cash from operating activities").
        kind: Value kind (see ``values.KINDS``).
    """

    name: str
    label: str
    kind: str


@dataclass(frozen=True)
class Categorical:
    """A static categorical attribute of an entity (sector, region, control)."""

    name: str
    label: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Metric:
    """A derived quantity used by medium and hard questions (CorpusQA appendix B).

    Attributes:
        name: Identifier.
        description: Definition given in the question text.
        sql: SQL expression over the fact table's columns.
        fn: The same quantity in plain Python over a row dict (the independent check).
        answer_type: ``number`` or ``percentage``.
        fields: Fields the metric reads (its evidence).
    """

    name: str
    description: str
    sql: str
    fn: Callable[[Mapping[str, float]], float]
    answer_type: str
    fields: tuple[str, ...]


@dataclass(frozen=True)
class Domain:
    """Everything the generator needs to know about one domain."""

    name: str
    singular: str
    plural: str
    document_kind: str
    fields: tuple[FieldSpec, ...]
    categoricals: tuple[Categorical, ...]
    sections: tuple[tuple[str, tuple[str, ...]], ...]
    filler_sections: tuple[str, ...]
    metrics: tuple[Metric, ...]
    period: Callable[[int], str]
    new_entity: Callable[[random.Random, set[str]], dict]
    year_values: Callable[[random.Random, dict, dict | None], dict[str, float]]

    def field(self, name: str) -> FieldSpec:
        """The field called ``name``."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"Domain {self.name!r} has no field {name!r}")


def _m(x: float) -> float:
    """Round to USD 0.1 million, never exactly zero."""
    v = round(x, 1)
    return v if v != 0 else 0.1


def _draw_name(rng: random.Random, taken: set[str], make: Callable[[random.Random], str]) -> str:
    for _ in range(10_000):
        name = make(rng)
        if name not in taken:
            taken.add(name)
            return name
    raise ValueError("Entity name space exhausted")


# -- finance: company annual reports ---------------------------------------------------
_SECTORS = tuple(names.SECTOR_WORDS)
_REGIONS = ("North America", "Europe", "Asia-Pacific", "Latin America")


def _new_company(rng: random.Random, taken: set[str]) -> dict:
    sector = rng.choice(_SECTORS)
    return {
        "name": _draw_name(rng, taken, lambda r: names.company_name(r, sector)),
        "sector": sector,
        "region": rng.choice(_REGIONS),
        "scale": 10 ** rng.uniform(2.0, 4.6),  # revenue between USD 100 million and 40 billion
        "shares": rng.uniform(40, 1500),  # millions of shares
        "margin": rng.gauss(0.08, 0.08),
        "rd": rng.uniform(0.0, 0.16)
        if sector in ("Technology", "Healthcare")
        else rng.uniform(0.0, 0.04),
        # Ratios that drift slowly, so a company's balance sheet looks like itself year to year.
        "asset_turn": rng.uniform(0.8, 2.6),
        "leverage": rng.uniform(0.25, 0.85),
        "ocf": rng.uniform(0.01, 0.12),
        "staff": rng.uniform(1.5, 6.0),
    }


def _company_year(rng: random.Random, ent: dict, prev: dict | None) -> dict[str, float]:
    revenue = prev["revenue"] * (1 + rng.gauss(0.05, 0.12)) if prev else ent["scale"]
    revenue = max(revenue, 20.0)
    net = revenue * (ent["margin"] + rng.gauss(0, 0.03))
    assets = revenue * ent["asset_turn"] * rng.uniform(0.95, 1.05)
    basic = net / ent["shares"]
    diluted = basic * rng.choice([1.0, rng.uniform(0.93, 0.995)]) if basic > 0 else basic
    return {
        "revenue": _m(revenue),
        "net_income": _m(net),
        "operating_cash_flow": _m(net + revenue * ent["ocf"] * rng.uniform(0.8, 1.2)),
        "financing_cash_flow": _m(revenue * rng.gauss(-0.03, 0.06)),
        "rd_expense": _m(revenue * ent["rd"] + 0.1),
        "total_assets": _m(assets),
        "total_liabilities": _m(assets * min(0.95, ent["leverage"] * rng.uniform(0.93, 1.07))),
        "employees": float(max(30, int(revenue * ent["staff"] * rng.uniform(0.95, 1.05)))),
        "basic_eps": round(basic, 2),
        "diluted_eps": round(diluted, 2),
    }


FINANCE = Domain(
    name="finance",
    singular="company",
    plural="companies",
    document_kind="Annual Report",
    fields=(
        FieldSpec("revenue", "revenue", "usd_m"),
        FieldSpec("net_income", "net income attributable to shareholders", "usd_m"),
        FieldSpec("operating_cash_flow", "net cash from operating activities", "usd_m"),
        FieldSpec("financing_cash_flow", "net cash from financing activities", "usd_m"),
        FieldSpec("rd_expense", "research and development expense", "usd_m"),
        FieldSpec("total_assets", "total assets", "usd_m"),
        FieldSpec("total_liabilities", "total liabilities", "usd_m"),
        FieldSpec("employees", "number of employees", "count"),
        FieldSpec("basic_eps", "basic earnings per share", "usd2"),
        FieldSpec("diluted_eps", "diluted earnings per share", "usd2"),
    ),
    categoricals=(
        Categorical("sector", "sector", _SECTORS),
        Categorical("region", "headquarters region", _REGIONS),
    ),
    sections=(
        (
            "Consolidated Income Statement",
            ("revenue", "net_income", "rd_expense", "basic_eps", "diluted_eps"),
        ),
        ("Consolidated Statement of Cash Flows", ("operating_cash_flow", "financing_cash_flow")),
        ("Consolidated Balance Sheet", ("total_assets", "total_liabilities")),
        ("Our People", ("employees",)),
    ),
    filler_sections=(
        "Letter to Shareholders",
        "Business Overview",
        "Risk Factors",
        "Corporate Governance",
        "Sustainability",
    ),
    metrics=(
        Metric(
            "net_margin",
            "net margin (net income attributable to shareholders divided by revenue, times 100)",
            "100.0 * net_income / revenue",
            lambda r: 100.0 * r["net_income"] / r["revenue"],
            "percentage",
            ("net_income", "revenue"),
        ),
        Metric(
            "debt_ratio",
            "debt ratio (total liabilities divided by total assets, times 100)",
            "100.0 * total_liabilities / total_assets",
            lambda r: 100.0 * r["total_liabilities"] / r["total_assets"],
            "percentage",
            ("total_liabilities", "total_assets"),
        ),
        Metric(
            "rd_intensity",
            "R&D intensity (research and development expense divided by revenue, times 100)",
            "100.0 * rd_expense / revenue",
            lambda r: 100.0 * r["rd_expense"] / r["revenue"],
            "percentage",
            ("rd_expense", "revenue"),
        ),
        Metric(
            "safety_margin",
            "operating safety margin in USD millions (net cash from operating activities minus "
            "research and development expense minus net income attributable to shareholders)",
            "operating_cash_flow - rd_expense - net_income",
            lambda r: r["operating_cash_flow"] - r["rd_expense"] - r["net_income"],
            "number",
            ("operating_cash_flow", "rd_expense", "net_income"),
        ),
        Metric(
            "risk_score",
            "risk score (1.2 x net cash from operating activities / total assets + 1.4 x net "
            "income attributable to shareholders / total assets + 3.3 x revenue / total assets)",
            "1.2 * operating_cash_flow / total_assets + 1.4 * net_income / total_assets + 3.3 * "
            "revenue / total_assets",
            lambda r: (
                1.2 * r["operating_cash_flow"] / r["total_assets"]
                + 1.4 * r["net_income"] / r["total_assets"]
                + 3.3 * r["revenue"] / r["total_assets"]
            ),
            "number",
            ("operating_cash_flow", "net_income", "revenue", "total_assets"),
        ),
    ),
    period=lambda y: f"FY{y}",
    new_entity=_new_company,
    year_values=_company_year,
)


# -- education: university fact books ---------------------------------------------------
_CONTROL = ("Public", "Private")
_SETTING = ("Urban", "Suburban", "Rural")
_US_REGIONS = ("Northeast", "Midwest", "South", "West")


def _new_university(rng: random.Random, taken: set[str]) -> dict:
    control = rng.choice(_CONTROL)
    ent: dict[str, Any] = {
        "name": _draw_name(rng, taken, names.university_name),
        "control": control,
        "setting": rng.choice(_SETTING),
        "region": rng.choice(_US_REGIONS),
        "size": 10 ** rng.uniform(3.2, 4.7),  # 1,600 to 50,000 students
        "selectivity": rng.uniform(0.05, 0.9),
        "tuition": rng.uniform(30_000, 62_000)
        if control == "Private"
        else rng.uniform(7_000, 16_000),
        "research": rng.uniform(0.0005, 0.03),
        # Slowly drifting ratios: faculty per student, part-time share, undergraduate share.
        "sfr": rng.uniform(9, 24),
        "part_time": rng.uniform(0.1, 1.4),
        "undergrad": rng.uniform(0.55, 0.85),
        "demand": rng.uniform(1.2, 3.5),
    }
    ent["grad"] = 97 - 45 * ent["selectivity"] + rng.gauss(0, 5)
    return ent


def _university_year(rng: random.Random, ent: dict, prev: dict | None) -> dict[str, float]:
    total = prev["total_enrollment"] * (1 + rng.gauss(0.01, 0.04)) if prev else ent["size"]
    apps = total * ent["demand"] * rng.uniform(0.92, 1.08)
    rate = min(0.97, max(0.03, ent["selectivity"] + rng.gauss(0, 0.02)))
    full = total / (ent["sfr"] * rng.uniform(0.95, 1.05))
    grad = min(98.5, max(25.0, ent["grad"] - 45 * (rate - ent["selectivity"]) + rng.gauss(0, 1)))
    tuition = prev["tuition"] * rng.uniform(1.01, 1.05) if prev else ent["tuition"]
    return {
        "applications": float(int(apps)),
        "admits": float(int(apps * rate)),
        "total_enrollment": float(int(total)),
        "undergraduate_enrollment": float(int(total * ent["undergrad"] * rng.uniform(0.98, 1.02))),
        "full_time_faculty": float(max(20, int(full))),
        "part_time_faculty": float(int(full * ent["part_time"] * rng.uniform(0.9, 1.1))),
        "graduation_rate": round(grad, 1),
        "retention_rate": round(min(99.5, grad + rng.uniform(2, 12)), 1),
        "research_expenditure": _m(total * ent["research"] * rng.uniform(0.9, 1.1)),
        "tuition": float(int(tuition)),
    }


EDUCATION = Domain(
    name="education",
    singular="university",
    plural="universities",
    document_kind="Institutional Fact Book",
    fields=(
        FieldSpec("applications", "number of first-year applications", "count"),
        FieldSpec("admits", "number of first-year admits", "count"),
        FieldSpec("total_enrollment", "total enrollment", "count"),
        FieldSpec("undergraduate_enrollment", "undergraduate enrollment", "count"),
        FieldSpec("full_time_faculty", "number of full-time faculty members", "count"),
        FieldSpec("part_time_faculty", "number of part-time faculty members", "count"),
        FieldSpec("graduation_rate", "six-year graduation rate", "percent"),
        FieldSpec("retention_rate", "first-year retention rate", "percent"),
        FieldSpec("research_expenditure", "research expenditure", "usd_m"),
        FieldSpec("tuition", "annual undergraduate tuition", "usd_int"),
    ),
    categoricals=(
        Categorical("control", "control", _CONTROL),
        Categorical("setting", "campus setting", _SETTING),
        Categorical("region", "region", _US_REGIONS),
    ),
    sections=(
        ("Admissions", ("applications", "admits")),
        ("Enrollment", ("total_enrollment", "undergraduate_enrollment")),
        ("Faculty", ("full_time_faculty", "part_time_faculty")),
        ("Student Success", ("graduation_rate", "retention_rate")),
        ("Finances and Research", ("research_expenditure", "tuition")),
    ),
    filler_sections=(
        "Message from the President",
        "Mission and History",
        "Academic Programs",
        "Campus Life",
        "Governance",
    ),
    metrics=(
        Metric(
            "admission_rate",
            "admission rate (first-year admits divided by first-year applications, times 100)",
            "100.0 * admits / applications",
            lambda r: 100.0 * r["admits"] / r["applications"],
            "percentage",
            ("admits", "applications"),
        ),
        Metric(
            "student_faculty_ratio",
            "student-to-faculty ratio (total enrollment divided by the sum of full-time "
            "faculty and one third of part-time faculty)",
            "total_enrollment / (full_time_faculty + part_time_faculty / 3.0)",
            lambda r: (
                r["total_enrollment"] / (r["full_time_faculty"] + r["part_time_faculty"] / 3.0)
            ),
            "number",
            ("total_enrollment", "full_time_faculty", "part_time_faculty"),
        ),
        Metric(
            "part_time_share",
            "part-time faculty share (part-time faculty divided by all faculty, times 100)",
            "100.0 * part_time_faculty / (full_time_faculty + part_time_faculty)",
            lambda r: (
                100.0 * r["part_time_faculty"] / (r["full_time_faculty"] + r["part_time_faculty"])
            ),
            "percentage",
            ("full_time_faculty", "part_time_faculty"),
        ),
        Metric(
            "research_per_faculty",
            "research expenditure per full-time faculty member, in USD thousands (research "
            "expenditure in USD millions times 1000 divided by full-time faculty members)",
            "research_expenditure * 1000.0 / full_time_faculty",
            lambda r: r["research_expenditure"] * 1000.0 / r["full_time_faculty"],
            "number",
            ("research_expenditure", "full_time_faculty"),
        ),
    ),
    period=lambda y: f"Fall {y}",
    new_entity=_new_university,
    year_values=_university_year,
)

#: name -> :class:`Domain`; third-party domains join through the
#: ``longctx.synth_domains`` entry points.
DOMAINS: Registry[Domain] = Registry("synth domain", group="longctx.synth_domains")
DOMAINS.register("finance", FINANCE)
DOMAINS.register("education", EDUCATION)


def get_domain(name: str) -> Domain:
    """The domain called ``name``.

    Raises:
        KeyError: unknown domain, listing the valid names.
    """
    return DOMAINS.get(name)
