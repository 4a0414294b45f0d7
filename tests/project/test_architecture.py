"""The house rules: import contracts, room sizes, module sizes and what the wheel ships."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGES = ("recommender", "connectors")
MAX_MODULES_PER_FOLDER = 15
LONG_MODULE_LINES = 410  # "about 400": a module longer than this says why at its top ("Length: ...")


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    executable = Path(sys.executable).with_name("lint-imports")
    if not executable.exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    return subprocess.run([str(executable), "--no-cache"], cwd=root, capture_output=True, text=True, check=False)


def test_the_import_contracts_hold():
    result = _lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(("module", "line", "broken"), [
    # a model reaching for I/O: connectors are the pipeline's door, not the models'
    ("recommender/models/signals.py", "import connectors", "never reach connectors"),
    # a connector importing the scoring side
    ("connectors/files/csv_records.py", "from recommender.features import collection_index", "records layer"),
    # a lower room importing a higher one
    ("recommender/features/word_counts.py", "from recommender.models import hybrid", "downwards only"),
    # two modules of one room importing each other
    ("recommender/scale/partitioned_index.py", "from recommender.scale import affinity", "no import cycle"),
])
def test_the_contracts_catch_a_forbidden_import(tmp_path, module, line, broken):
    for name in (*PACKAGES, "pyproject.toml"):
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "data", "templates"))
        else:
            shutil.copy(source, tmp_path / name)
    (tmp_path / "recommender" / "data").mkdir()
    (tmp_path / "recommender" / "data" / "__init__.py").write_text("")
    target = tmp_path / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    broken_lines = [text for text in result.stdout.replace("\n", " ").split("KEPT") if "BROKEN" in text]
    assert any(broken in text for text in broken_lines), result.stdout


def _folders():
    for top in (*PACKAGES, "tests", "benchmarks"):
        for folder in [REPO / top, *sorted(path for path in (REPO / top).rglob("*") if path.is_dir())]:
            if "__pycache__" not in folder.parts:
                yield folder


def test_no_folder_holds_more_than_15_modules():
    crowded = {str(folder.relative_to(REPO)): count for folder in _folders()
               if (count := len(list(folder.glob("*.py")))) > MAX_MODULES_PER_FOLDER}
    assert not crowded


def test_a_long_module_says_why_at_its_top():
    unexplained = []
    for top in (*PACKAGES, "benchmarks"):
        for path in sorted((REPO / top).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if text.count("\n") > LONG_MODULE_LINES and "Length:" not in (ast.get_docstring(ast.parse(text)) or ""):
                unexplained.append(f"{path.relative_to(REPO)} ({text.count(chr(10))} lines)")
    assert not unexplained


def test_the_wheel_builds_without_warnings_and_ships_the_packages_and_their_data(tmp_path):
    pytest.importorskip("setuptools", minversion="77")
    source = tmp_path / "source"
    # A copy of the tracked files, so that the build leaves nothing in the repository.
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                             capture_output=True, text=True, check=False)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    for name in tracked.stdout.splitlines():
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w",
                             str(tmp_path / "wheel"), str(source)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr
    assert "warning" not in output.lower(), output
    (wheel,) = (tmp_path / "wheel").glob("litrank-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in ("recommender/cli/__init__.py", "recommender/models/hybrid.py", "connectors/zotero/items.py",
                     "recommender/data/icml2026/page-1.txt", "recommender/data/diffusion-library.bib",
                     "connectors/templates/report.html.j2"):
        assert expected in names
    assert not any(name.startswith(("benchmarks/", "tests/", "examples/")) for name in names)
    packages = {name.rsplit("/", 1)[0] for name in names if name.endswith("/__init__.py")}
    in_repository = {str(path.parent.relative_to(REPO)) for top in PACKAGES for path in (REPO / top).rglob("__init__.py")}
    assert packages == in_repository
