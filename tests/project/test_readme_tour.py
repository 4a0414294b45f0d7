"""The README's five-minute tour, run as a new user runs it.

Every command of the tour's code blocks in README.md (``litrank ...`` lines of ``bash`` blocks,
``$ litrank ...`` lines of ``console`` blocks, ``export NAME=...`` lines) is read from the README
itself, so this test follows the README when it changes, and run in order as a real ``litrank``
process in a fresh folder holding a copy of ``examples/``, with its own home, config, data and
cache directories, and without the embeddings extra (the README's outputs are those of a default
install, which ranks with the bundled static table). Each must exit with 0; the output lines a console block shows under a command
must be in what it printed (a line that is only "…" stands for lines left out, and "…" inside a
line for text left out); files written with ``-o`` must exist and hold the picks the command
reported; a BibTeX block must match an entry of a written ``.bib`` file; ``litrank sync`` must
fill the Zotero collection it names.

Nothing reaches the network. Remote sources go to the suite's loopback fakes
(``tests/fakes/``): ``openreview:`` to the fake OpenReview API, ``arxiv:`` to the fake arXiv API
(its entries moved to the last days, so that ``--days 7`` finds them), ``zotero:user/...`` to the
fake Zotero Web API serving the example library. ``zotero:local`` reads a ``~/Zotero/zotero.sqlite``
built by the suite's fixtures (``tests/fakes/zotero_fixtures.py``, on Zotero's schema); should
they be unable to build one, the command runs with the bundled example library in place of
``zotero:local`` (same flags), which checks everything but the Zotero reader (tested on its own in
``tests/zotero/``).
"""
from __future__ import annotations

import copy
import datetime as dt
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import REPO

README = REPO / "README.md"
WITHOUT_EXTRA = REPO / "tests" / "fakes" / "without_embeddings_extra"
TOUR_HEADING = "## Five-minute tour"
ZOTERO_KEY = "Zk3ySecretWriteKey0123456789"
ZOTERO_USER_ID = 475425
# Values for the README's `export NAME=...` lines, whose "..." the user fills in.
PLACEHOLDER_VALUES = {"ZOTERO_API_KEY": ZOTERO_KEY, "ZOTERO_USER_ID": str(ZOTERO_USER_ID)}
ELLIPSIS = "…"


@dataclass
class Step:
    """One line of the tour: a command (``argv``) or an ``export`` (``name``, ``value``)."""

    line: str
    argv: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)  # output lines a console block shows under it
    export: tuple[str, str] | None = None


@dataclass
class Tour:
    steps: list[Step]
    bibtex_blocks: list[list[str]]


def tour_text(readme: str) -> str:
    start = readme.index(TOUR_HEADING)
    end = readme.find("\n## ", start + len(TOUR_HEADING))
    return readme[start:] if end < 0 else readme[start:end]


def _without_comment(line: str) -> str:
    """The line up to a shell comment: a `#` at the start or after a blank, outside quotes."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index]
    return line


def _step(line: str) -> Step:
    words = shlex.split(_without_comment(line))
    if words and words[0] == "export" and len(words) == 2 and "=" in words[1]:
        name, value = words[1].split("=", 1)
        return Step(line, export=(name, value))
    if not words or words[0] != "litrank":
        pytest.fail(f"the tour shows a command this test does not know how to run: {line!r} "
                    "(teach tests/test_readme_tour.py, or show it outside the tour)")
    return Step(line, argv=words)


def parse_tour(text: str) -> Tour:
    steps, bibtex_blocks = [], []
    blocks = re.findall(r"^```([\w-]*)\n(.*?)^```", text, flags=re.M | re.S)
    for language, body in blocks:
        lines = body.rstrip("\n").split("\n")
        if language in ("bash", "sh", "shell"):
            for line in lines:
                if _without_comment(line).strip():
                    steps.append(_step(line.strip()))
        elif language == "console":
            for line in lines:
                if line.startswith("$ "):
                    steps.append(_step(line[2:].strip()))
                elif steps and line.strip():
                    steps[-1].expected.append(line.rstrip())
        elif language == "bibtex":
            bibtex_blocks.append([line.rstrip() for line in lines if line.strip()])
    return Tour(steps, bibtex_blocks)


def shown_in(expected: str, printed: list[str]) -> bool:
    """Whether a line the README shows is among the printed lines: equal (blanks at the ends
    aside), or, where it has "…", its pieces in that order within one printed line."""
    if ELLIPSIS not in expected:
        return any(expected.strip() == line.strip() for line in printed)
    pieces = [piece.strip() for piece in expected.split(ELLIPSIS) if piece.strip()]
    for line in printed:
        at = 0
        for piece in pieces:
            at = line.find(piece, at)
            if at < 0:
                break
            at += len(piece)
        else:
            return True
    return False


def option(argv: list[str], *names: str, default: str | None = None) -> str | None:
    for index, word in enumerate(argv):
        if word in names and index + 1 < len(argv):
            return argv[index + 1]
        for name in names:
            if name.startswith("--") and word.startswith(name + "="):
                return word.split("=", 1)[1]
    return default


def litrank_command() -> list[str]:
    script = Path(sys.executable).with_name("litrank")
    if script.exists():
        return [str(script)]
    found = shutil.which("litrank")
    return [found] if found else [sys.executable, "-m", "recommender"]


# -- the fakes ---------------------------------------------------------------------------------

def recent_arxiv_entries(today: dt.date) -> list[dict]:
    """The fake arXiv's entries, moved so that the newest was submitted yesterday."""
    from tests.fakes.arxiv_server import ENTRIES

    entries = json.loads(ENTRIES.read_text(encoding="utf-8"))
    newest = max(dt.datetime.fromisoformat(e["published"].replace("Z", "+00:00")) for e in entries)
    shift = dt.datetime.combine(today - dt.timedelta(days=1), newest.timetz()) - newest
    moved = []
    for entry in entries:
        published = dt.datetime.fromisoformat(entry["published"].replace("Z", "+00:00")) + shift
        moved.append({**copy.deepcopy(entry), "published": published.strftime("%Y-%m-%dT%H:%M:%SZ")})
    return moved


def zotero_items(papers) -> list[dict]:
    """The example library as Zotero Web API items (what a user's own Zotero library would hold)."""
    items = []
    for index, paper in enumerate(papers):
        creators = []
        for name in paper.authors:
            first, _, last = name.rpartition(" ")
            creators.append({"creatorType": "author", "firstName": first, "lastName": last})
        items.append({"key": f"LIB{index:05d}", "version": 1, "itemType": "journalArticle", "title": paper.title,
                      "creators": creators, "abstractNote": paper.abstract, "date": str(paper.year or ""),
                      "DOI": paper.doi, "url": paper.url, "publicationTitle": paper.venue, "extra": "", "tags": [],
                      "collections": [], "relations": {}, "dateAdded": f"2024-01-01T00:{index // 60:02d}:{index % 60:02d}Z",
                      "dateModified": "2024-01-01T00:00:00Z"})
    return items


@pytest.fixture
def zotero_web():
    pytest.importorskip("pyzotero")
    import connectors
    from tests.fakes.zotero_server import FakeZoteroAPI, Library

    with FakeZoteroAPI(api_key=ZOTERO_KEY, writes=True) as fake:
        library = fake.add_library(Library("users", ZOTERO_USER_ID, "My Library"))
        for item in zotero_items(connectors.load(REPO / "examples" / "diffusion-library.bib")):
            library.add("items", item)
        yield fake


@pytest.fixture
def remote_apis(httpserver):
    """One loopback server for OpenReview and arXiv (and OpenAlex and Semantic Scholar, which
    the tour does not use: a request there gets an error instead of reaching the network)."""
    pytest.importorskip("openreview")
    pytest.importorskip("arxiv")
    from tests.fakes.arxiv_server import FakeArxiv
    from tests.fakes.openreview_server import FakeOpenReview

    httpserver.expect_request("/notes").respond_with_handler(FakeOpenReview())
    today = dt.datetime.now(dt.timezone.utc).date()
    httpserver.expect_request("/api/query").respond_with_handler(FakeArxiv(entries=recent_arxiv_entries(today)))
    base = httpserver.url_for("").rstrip("/")
    return {"LITRANK_OPENREVIEW_API": base, "LITRANK_ARXIV_API": httpserver.url_for("/api/query"),
            "LITRANK_ARXIV_DELAY": "0", "LITRANK_OPENALEX_API": base + "/openalex", "LITRANK_S2_API": base + "/s2"}


def zotero_database(home: Path) -> bool:
    """``~/Zotero/zotero.sqlite``, the little library of the suite's fixtures on Zotero's own
    schema; False when the fixtures cannot build it here."""
    from tests.fakes import zotero_fixtures

    (home / "Zotero").mkdir(parents=True)
    try:
        zotero_fixtures.make_library(home / "Zotero" / "zotero.sqlite")
    except (OSError, sqlite3.Error):
        return False
    return True


def user_environment(tmp_path: Path, services: dict[str, str]) -> dict[str, str]:
    """A new user's environment: nothing of the machine's litrank, Zotero or XDG settings."""
    dropped = ("LITRANK_", "ZOTERO_", "XDG_", "SEMANTIC_SCHOLAR_", "OPENREVIEW_")
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(dropped) and name not in ("HOME", "USERPROFILE", "APPDATA", "COLUMNS")}
    home = tmp_path / "home"
    env.update({
        "HOME": str(home), "USERPROFILE": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "LITRANK_CONFIG_DIR": str(tmp_path / "config"), "LITRANK_CACHE_DIR": str(tmp_path / "cache"),
        "LITRANK_DATA_DIR": str(tmp_path / "data"),
        # The README's outputs are those of an install without the embeddings extra (which CI
        # installs): its sitecustomize makes sentence-transformers unimportable, so "auto" is the
        # static table, as on a default install.
        "PYTHONPATH": os.pathsep.join([str(WITHOUT_EXTRA), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "COLUMNS": "120",  # the width of the README's tables
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        **services,
    })
    return env


def expand(word: str, variables: dict[str, str]) -> str:
    def value(match: re.Match) -> str:
        name = match.group(1) or match.group(2)
        if name not in variables:
            pytest.fail(f"the tour uses ${name}, which no `export` line of the tour sets")
        return variables[name]

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, word)


# -- what a step must have done ----------------------------------------------------------------

def check_output_file(step: Step, argv: list[str], workdir: Path, stderr: str) -> None:
    output = option(argv, "-o", "--output", default="reading-list.html" if argv[1] == "report" else None)
    if output is None:
        return
    path = workdir / output
    assert path.is_file() and path.stat().st_size > 0, f"{step.line}: {output} was not written"
    if argv[1] == "zotero-plugin":  # the plugin: a zip Zotero installs, with its manifest
        import zipfile

        assert "manifest.json" in zipfile.ZipFile(path).namelist(), f"{step.line}: no plugin in {output}"
        assert f"to {output}" in stderr or f"Wrote {output}" in stderr, f"{step.line}: not said\n{stderr}"
        return
    wrote = re.search(rf"Wrote (\d+) (?:picks|papers)(?: from .+?)? to {re.escape(output)}", stderr)
    assert wrote, f"{step.line}: no 'Wrote N ... to {output}' on stderr:\n{stderr}"
    count = int(wrote.group(1))
    top = int(option(argv, "-n", "--top", default="50" if argv[1] == "report" else "20"))
    if argv[1] in ("rank", "report"):
        assert 0 < count and (top == 0 or count <= top), f"{step.line}: wrote {count} picks"
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".bib":
        assert len(re.findall(r"^@\w+\{", text, flags=re.M)) == count, f"{step.line}: not {count} entries"
    elif path.suffix == ".jsonl":
        assert len(text.splitlines()) == count, f"{step.line}: not {count} lines"
    elif path.suffix == ".html":
        assert "<html" in text.lower() and "plotly" in text.lower(), f"{step.line}: not the report page"


def check_picks_count(step: Step, argv: list[str], stdout: str) -> None:
    """A table's "Top K of M papers": K picks as -n asks (all of them when fewer)."""
    if argv[1] != "rank" or option(argv, "-o", "--output") or option(argv, "-f", "--format", default="table") != "table":
        return
    top = int(option(argv, "-n", "--top", default="20"))
    found = re.search(r"Top (\d+) of (\d+) papers", stdout)
    assert found, f"{step.line}: no 'Top K of M papers' line:\n{stdout}"
    shown, total = int(found.group(1)), int(found.group(2))
    assert shown == (total if top == 0 else min(top, total)), f"{step.line}: {found.group(0)}"
    rows = re.findall(r"^\s+(\d+)\s+-?\d+\.\d{3}\s", stdout, flags=re.M)
    assert [int(row) for row in rows] == list(range(1, shown + 1)), f"{step.line}: rows {rows}"


def check_json(step: Step, argv: list[str], stdout: str) -> None:
    if argv[1] == "rank" and option(argv, "-f", "--format") == "json" and not option(argv, "-o", "--output"):
        picks = json.loads(stdout)
        top = int(option(argv, "-n", "--top", default="20"))
        assert 0 < len(picks) <= (top or len(picks)) and all(pick["id"] for pick in picks), step.line


def check_sync(step: Step, argv: list[str], zotero, writes_before: int) -> None:
    if argv[1] != "sync":
        return
    writes = [r for r in zotero.requests if r.method != "GET"]
    if "--dry-run" in argv:
        assert len(writes) == writes_before, f"{step.line}: a dry run wrote to Zotero"
        return
    name = option(argv, "--to")
    top = int(option(argv, "-n", "--top", default="20"))
    (library,) = zotero.libraries.values()
    keys = [key for key, c in library.collections.items() if c["data"]["name"] == name.split("/")[-1]]
    assert len(keys) == 1, f"{step.line}: no Zotero collection {name!r}"
    filled = [o["data"] for o in library.items.values() if keys[0] in o["data"].get("collections", [])]
    assert len(filled) == top, f"{step.line}: {len(filled)} items in {name!r}, not {top}"
    assert all(any(t["tag"] == "litrank" for t in item["tags"]) for item in filled)


# -- the tests ---------------------------------------------------------------------------------

def test_the_tour_shows_the_five_parts():
    """The tour keeps what issue 22 asks of it: your BibTeX, your Zotero, a conference from
    OpenReview/arXiv, the report, feedback; and shows real ids and no developers' data."""
    tour = parse_tour(tour_text(README.read_text(encoding="utf-8")))
    commands = [step.argv for step in tour.steps if step.argv]
    assert any(a[1] == "rank" and option(a, "-l", "--library", default="").endswith(".bib") for a in commands)
    assert any(option(a, "-l", "--library", default="").startswith("zotero:") for a in commands)
    assert any(a[1] == "sync" for a in commands)
    assert any(option(a, "-c", "--collection", default="").startswith(("openreview:", "arxiv:")) for a in commands)
    assert any(a[1] == "report" for a in commands)
    assert any(a[1] == "feedback" for a in commands)
    assert all("../shared" not in step.line for step in tour.steps)


def test_the_readme_tour_runs_as_written(tmp_path, zotero_web, remote_apis):
    tour = parse_tour(tour_text(README.read_text(encoding="utf-8")))
    workdir = tmp_path / "clone"
    workdir.mkdir()
    shutil.copytree(REPO / "examples", workdir / "examples")
    env = user_environment(tmp_path, {**remote_apis, "LITRANK_ZOTERO_API_URL": zotero_web.url})
    has_zotero_database = zotero_database(Path(env["HOME"]))
    variables: dict[str, str] = {}
    litrank = litrank_command()

    for step in tour.steps:
        if step.export:
            name, value = step.export
            if value in ("...", "…"):
                assert name in PLACEHOLDER_VALUES, f"no test value for the tour's `export {name}=...`"
                value = PLACEHOLDER_VALUES[name]
            variables[name] = env[name] = value
            continue
        argv = [expand(word, {**env, **variables}) for word in step.argv]
        if not has_zotero_database and "zotero:local" in argv:
            # No zotero.sqlite could be built: the same command with the bundled example library
            # in place of zotero:local.
            argv = [str(workdir / "examples" / "diffusion-library.bib") if word == "zotero:local" else word
                    for word in argv]
        writes_before = len([r for r in zotero_web.requests if r.method != "GET"])
        result = subprocess.run([*litrank, *argv[1:]], cwd=workdir, env=env, capture_output=True, text=True,
                                timeout=300, check=False)
        report = f"README: {step.line}\nexit code {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        assert result.returncode == 0, report
        assert "Traceback" not in result.stderr, report
        printed = (result.stdout + "\n" + result.stderr).splitlines()
        missing = [line for line in step.expected if line.strip() != ELLIPSIS and not shown_in(line, printed)]
        assert not missing, f"the README shows lines this run did not print: {missing}\n{report}"
        check_output_file(step, argv, workdir, result.stderr)
        check_picks_count(step, argv, result.stdout)
        check_json(step, argv, result.stdout)
        check_sync(step, argv, zotero_web, writes_before)

    written = [line for path in workdir.glob("*.bib") for line in path.read_text(encoding="utf-8").splitlines()]
    for block in tour.bibtex_blocks:
        missing = [line for line in block if line.strip() != ELLIPSIS and not shown_in(line, written)]
        assert not missing, f"the README's BibTeX entry is not in the .bib files the tour wrote: {missing}"
    # The feedback the tour gave is stored, under the ids the README shows.
    judged = [word for step in tour.steps for flag, word in zip(step.argv, step.argv[1:])
              if flag in ("--like", "--dislike")]
    if judged:
        listed = subprocess.run([*litrank, "feedback", "--list", "--format", "json"], cwd=workdir, env=env,
                                capture_output=True, text=True, timeout=120, check=False)
        assert listed.returncode == 0, listed.stderr
        assert set(judged) <= {entry["paper_id"] for entry in json.loads(listed.stdout)}
