"""The manual builds as a site with no warning, and the README's links into it hold.

``mkdocs build --strict`` (what ``make docs`` runs) fails on a broken link or anchor between pages,
a page left out of the nav, a nav entry without its page and a docstring mkdocstrings cannot read
(``mkdocs.yml``'s ``validation`` turns each into a warning, ``--strict`` each warning into a
failure). The README is not a page of the site (it is the repository's front page), so its links
are checked here: each names a file of the repository, and an anchor into a page a heading of it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
HEADING = re.compile(r"^#+ (?P<title>.+?)\s*$", re.M)


def test_the_site_builds_strict_offline(tmp_path):
    """The whole site, the API reference included, with every warning an error."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    api = (tmp_path / "site" / "api" / "front" / "index.html").read_text()
    assert "Answer several questions over one corpus" in api  # answer_many's docstring, rendered
    assert "fonts.googleapis" not in (tmp_path / "site" / "index.html").read_text()  # no web fonts


def test_the_site_config_turns_every_broken_link_into_a_warning():
    """What the strict build relies on: links, anchors and pages left out are validated."""
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["validation"] == {
        "omitted_files": "warn",
        "absolute_links": "warn",
        "unrecognized_links": "warn",
        "anchors": "warn",
    }
    assert config["theme"]["font"] is False  # nothing fetched when the site is built or opened


def slug(title: str) -> str:
    """A heading's anchor, as Python-Markdown's ``toc`` and GitHub make it."""
    text = re.sub(r"[^\w\s-]", "", title.replace("`", "")).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def test_every_link_of_the_readme_names_a_file_and_an_anchor_that_exist():
    links = [m["target"] for m in LINK.finditer((ROOT / "README.md").read_text())]
    local = [t for t in links if not re.match(r"\w+://|mailto:", t)]
    assert sum(t.startswith("docs/") for t in local) >= 20  # the map of the manual
    for target in local:
        path, _, anchor = target.partition("#")
        file = ROOT / path
        assert file.exists(), f"README links to {target}: no such file"
        if anchor:
            slugs = {slug(h["title"]) for h in HEADING.finditer(file.read_text())}
            assert anchor in slugs, f"README links to {target}: no such heading"


def test_every_page_of_the_manual_is_linked_from_the_readme():
    linked = {
        m["target"].partition("#")[0] for m in LINK.finditer((ROOT / "README.md").read_text())
    }
    pages = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "docs").glob("*.md")  # the API reference's pages hang off api/index.md
    }
    assert pages <= linked, sorted(pages - linked)


def _first_column(header: str) -> list[str]:
    """The names (backquoted) in the first column of the README table under ``header``."""
    text = (ROOT / "README.md").read_text()
    rows = text[text.index(header) :].split("\n\n", 1)[0].splitlines()[2:]
    return [name for row in rows for name in re.findall(r"`(\w+)`", row.split("|")[1])]


def test_the_readmes_strategy_and_benchmark_tables_list_every_registered_name():
    """The front door's tables are the registries' names, no more, no fewer (a plug-in registered
    in the tree gets a row)."""
    from longctx.experiments.benchmarks import BENCHMARKS
    from longctx.graphs import STRATEGIES

    assert sorted(_first_column("| strategy | what it does |")) == sorted(STRATEGIES.names())
    assert sorted(_first_column("| name | benchmark |")) == sorted(BENCHMARKS.names())
