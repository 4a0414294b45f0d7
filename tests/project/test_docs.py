"""The README and docs/: a short front page, links that resolve, a docs site that builds with no
warning, module paths that exist, and no command pointing a user at the developers' shared data."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

README = REPO / "README.md"
DOCS = REPO / "docs"
MAX_README_LINES = 300
# The one page that may name the developers' data folder beside the repository (with the tests).
SHARED_DATA_ALLOWED = {DOCS / "development.md"}
PAGES = sorted(DOCS.glob("*.md"))
LINK = re.compile(r"\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)\)")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _without_code(text: str) -> str:
    """Markdown without fenced code blocks and inline code, where links are not links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def _anchors(path: Path) -> set[str]:
    """The anchors of a page, as mkdocs makes them (Python-Markdown's toc) plus explicit ids."""
    markdown = pytest.importorskip("markdown")
    converter = markdown.Markdown(extensions=["toc", "tables"])
    html = converter.convert(_text(path))

    def ids(tokens):
        for token in tokens:
            yield token["id"]
            yield from ids(token["children"])

    return set(ids(converter.toc_tokens)) | set(re.findall(r'\bid="([^"]+)"', html))


def test_the_readme_is_a_front_page():
    lines = _text(README).splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move detail into docs/"
    # The install, run and test commands that .ci/run follows.
    install = _text(README).split("## Install, run, test", 1)[1].split("\n## ", 1)[0]
    for command in ("pip install -e '.[test]'", "litrank rank", "python -m pytest -q"):
        assert any(line.startswith(command + " ") or line == command for line in install.splitlines()), command
    assert "(docs/report.png)" in _text(README)


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: str(p.relative_to(REPO)))
def test_links_resolve(path):
    """Relative links point at files that exist and at anchors those pages have (mkdocs checks
    docs/ too; this also covers the README, whose links GitHub follows)."""
    broken = []
    for target in LINK.findall(_without_code(_text(path))):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(target)
        if path.parent == DOCS and file_part and not linked.is_relative_to(DOCS):
            broken.append(f"{target} (outside docs/: name the file in code instead)")
    assert not broken


def test_the_docs_build_with_mkdocs_strict(tmp_path):
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        pytest.skip("mkdocs is not installed (pip install -e '.[test]')")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"),
                             "-d", str(tmp_path / "site")], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    nav = _text(REPO / "mkdocs.yml")
    assert all(page.name in nav for page in PAGES), "every page of docs/ is in mkdocs.yml's nav"
    assert (tmp_path / "site" / "index.html").exists()


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: str(p.relative_to(REPO)))
def test_no_user_is_sent_to_the_shared_data(path):
    """`../shared` is the developers' folder beside the repository; a user has none."""
    if path in SHARED_DATA_ALLOWED:
        return
    mentions = [line for line in _text(path).splitlines() if "../shared" in line or "shared/seeds" in line]
    assert not mentions


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: str(p.relative_to(REPO)))
def test_the_files_and_modules_named_exist(path):
    """Source paths (`recommender/models/hybrid.py`) and `python -m` modules named in the text
    exist, so that the docs follow the code when a module moves."""
    text = _text(path)
    named = set(re.findall(r"(?<![\w/.])((?:recommender|connectors|tests|benchmarks|examples)/[\w./-]*\w)", text))
    missing = [name for name in sorted(named) if not (REPO / name).exists()]
    modules = set(re.findall(r"python -m (benchmarks\.\w+)", text))
    missing += [module for module in sorted(modules) if not (REPO / (module.replace(".", "/") + ".py")).exists()]
    assert not missing


def _layout_rows():
    """(package, room folder, modules named) for each row of docs/development.md's layout tables."""
    package = None
    for line in _text(DOCS / "development.md").splitlines():
        if line.startswith("#"):
            heading = re.match(r"^### `(\w+)/`$", line)
            package = heading.group(1) if heading else None
        elif package and line.startswith("| ") and not line.startswith(("| room", "| ---")):
            room, _, modules = (cell.strip() for cell in line.strip("|").split("|"))
            folder = REPO / package if room == "top level" else REPO / package / room.strip("`/")
            yield package, folder, set(re.findall(r"`([\w/.]+\.(?:py|j2))`", modules))


def test_the_layout_in_the_development_page_is_the_tree():
    """Every module the layout names exists in its room, and every module of a room is named:
    a module added, moved or renamed needs a line there."""
    rows = list(_layout_rows())
    assert {package for package, _, _ in rows} == {"recommender", "connectors"}
    problems = []
    for _, folder, named in rows:
        if not folder.is_dir():
            problems.append(f"{folder.relative_to(REPO)}: no such folder")
            continue
        problems += [f"{folder.relative_to(REPO)}/{name}: named but absent" for name in sorted(named)
                     if not (folder / name).exists()]
        problems += [f"{path.relative_to(REPO)}: not named" for path in sorted(folder.glob("*.py"))
                     if path.name != "__init__.py" and path.name not in named]
    rooms = {folder for _, folder, _ in rows}
    for package in ("recommender", "connectors"):
        problems += [f"{path.relative_to(REPO)}/: a room the layout leaves out"
                     for path in sorted((REPO / package).iterdir())
                     if path.is_dir() and (path / "__init__.py").exists() and path not in rooms]
    assert not problems
