"""Deterministic, unique, realistic-sounding entity names (companies, universities)."""

from __future__ import annotations

import random

_STARTS = (
    "Ash Bel Bran Cal Dun El Fair Glen Har Kings Lin Mar North Oak Pem Red Ros Sal Stan Thorn Wes "
    "Whit Wil Wood Ard Bram Carr Dal Esk Fen Gran Hol Ken Lang Mil Nor Pen Ral Sher Tal Brook "
    "Clay Cold Elm Hart Lock Mor Stone"
).split()
_ENDS = (
    "ford field wick ton dale mere brook bury haven ridge stead moor port view wood worth ley "
    "gate crest well"
).split()

#: Company name words by sector, so a name hints at its industry as real names do.
SECTOR_WORDS: dict[str, tuple[str, ...]] = {
    "Technology": ("Systems", "Software", "Digital", "Semiconductor", "Networks", "Data"),
    "Healthcare": ("Biosciences", "Pharma", "Medical", "Health", "Therapeutics"),
    "Energy": ("Energy", "Petroleum", "Renewables", "Power", "Resources"),
    "Consumer Goods": ("Foods", "Retail", "Brands", "Apparel", "Beverages"),
    "Industrials": ("Machinery", "Aerospace", "Logistics", "Engineering", "Maritime"),
    "Financials": ("Capital", "Bancorp", "Insurance", "Financial", "Trust"),
    "Utilities": ("Utilities", "Water", "Electric", "Gas"),
}
_COMPANY_SUFFIXES = ("Holdings", "Group", "Inc.", "plc", "Corporation", "AG", "Ltd.")
_UNIVERSITY_FORMS = (
    "University of {p}",
    "{p} State University",
    "{p} College",
    "{p} Institute of Technology",
    "{p} University",
    "{p} Polytechnic University",
)


def place_name(rng: random.Random) -> str:
    """A made-up English place name such as "Ashford" or "Thornmere"."""
    return rng.choice(_STARTS) + rng.choice(_ENDS)


def company_name(rng: random.Random, sector: str) -> str:
    """A company name fitting ``sector``, e.g. "Halvorbrook Maritime Holdings"."""
    return f"{place_name(rng)} {rng.choice(SECTOR_WORDS[sector])} {rng.choice(_COMPANY_SUFFIXES)}"


def university_name(rng: random.Random) -> str:
    """A university name, e.g. "Ravenmere State University"."""
    return rng.choice(_UNIVERSITY_FORMS).format(p=place_name(rng))


def slug(text: str) -> str:
    """Lower-case file-name fragment of ``text``."""
    out = "".join(c.lower() if c.isalnum() else "-" for c in text)
    return "-".join(p for p in out.split("-") if p)
