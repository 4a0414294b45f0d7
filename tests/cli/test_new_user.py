"""What a new user hit, each a clear line: -v after the command, settings named by file and key,
CSV and JSONL mistakes, offline enrichment with an empty cache, plurals, a report with nowhere
to open it."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO


def litrank(*arguments: str, cwd, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "recommender", *arguments], capture_output=True, text=True, cwd=cwd,
                          check=False, timeout=300, env={**os.environ, "LITRANK_EMBEDDER": "none", **(env or {})})


@pytest.mark.parametrize("command", [["rank", "-n", "1"], ["report", "-n", "1", "-o", "page.html"],
                                     ["config", "show"], ["feedback", "--list"]])
def test_v_and_q_work_after_the_command_too(tmp_path, command):
    verbose = litrank(*command, "-v", cwd=tmp_path)
    assert verbose.returncode == 0, verbose.stderr
    before = litrank("-v", *command, cwd=tmp_path)
    assert verbose.stderr.count("\n") == before.stderr.count("\n")
    quiet, quiet_before = litrank(*command, "-q", cwd=tmp_path), litrank("-q", *command, cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == quiet_before.stderr


def test_rank_v_lists_what_plain_rank_only_counts(tmp_path):
    plain, verbose = litrank("rank", "-n", "1", cwd=tmp_path), litrank("rank", "-n", "1", "-v", cwd=tmp_path)
    assert "6 duplicates merged (same abstract, no title: 6) (-v lists them)." in plain.stderr
    assert verbose.stderr.count("same abstract, no title") == 7  # the count, then each of the six


@pytest.mark.parametrize(("setting", "message"), [
    ("top = -3", "top = -3: -3 is not in the range x>=0"),
    ('model = "best"', "model = 'best'"),
    ('library = ["missing.bib"]', "library = 'missing.bib': no such file or directory"),
])
def test_a_bad_setting_is_named_by_its_file_and_key(tmp_path, setting, message):
    settings = tmp_path / "litrank.toml"
    settings.write_text(setting + "\n", encoding="utf-8")
    result = litrank("rank", cwd=tmp_path, env={"LITRANK_CONFIG": str(settings)})
    assert result.returncode == 2
    assert result.stderr.startswith(f"Error: {settings}: ") and message in result.stderr
    assert "'-n'" not in result.stderr and "Traceback" not in result.stderr
    shown = litrank("config", "show", cwd=tmp_path, env={"LITRANK_CONFIG": str(settings)})
    if "library" in setting:  # `config show` still shows the file that names it
        assert shown.returncode == 0 and "missing.bib" in shown.stdout


def test_an_unclosed_csv_quote_is_named_and_extra_columns_are_said(tmp_path):
    (tmp_path / "papers.csv").write_text(
        'title,abstract,authors,stars\n"First paper,About one thing,Ann Lee,3\nSecond paper,About another,Bo Chen,5\n'
        'Third paper,About a third,Cy Diaz,1\n', encoding="utf-8")
    result = litrank("rank", "-c", "papers.csv", "-n", "0", "-f", "jsonl", cwd=tmp_path)
    assert result.returncode == 0
    assert "warning: papers.csv: line 2: a quote opened on this line is never closed, so lines 2-4 were read as " \
           "one row" in result.stderr
    assert "papers.csv: read columns title, abstract, authors; stars kept as extra fields (not ranked on)" \
        in result.stderr


def test_a_jsonl_title_that_is_no_text_is_rejected_by_line(tmp_path):
    (tmp_path / "papers.jsonl").write_text('{"title": 123, "abstract": "A number for a title."}\n'
                                           '{"title": "A real title", "abstract": "Text."}\n', encoding="utf-8")
    result = litrank("rank", "-c", "papers.jsonl", "-n", "0", "-f", "jsonl", cwd=tmp_path)
    assert result.returncode == 0
    assert "papers.jsonl: line 1: title must be text, not int 123; line skipped" in result.stderr
    assert result.stdout.count("\n") == 1 and '"A real title"' in result.stdout


def test_one_is_singular(tmp_path):
    (tmp_path / "one.jsonl").write_text('{"title": "Consistency models for diffusion", "abstract": "Diffusion."}\n',
                                        encoding="utf-8")
    result = litrank("rank", "-l", "one.jsonl", "-c", "one.jsonl", "-n", "1", cwd=tmp_path)
    assert "1 paper already in your library was skipped" in result.stderr
    ranked = litrank("rank", "-l", "one.jsonl", "-n", "1", "-o", "pick.json", cwd=tmp_path)
    assert "Wrote 1 pick to pick.json" in ranked.stderr
    table = litrank("rank", "-l", "one.jsonl", "-n", "1", cwd=tmp_path)
    assert "ranked against 1 paper of" in " ".join(table.stdout.split())


def test_report_open_without_a_browser_says_where_the_page_is(tmp_path):
    result = litrank("report", "-n", "2", "-o", "page.html", "--open", cwd=tmp_path, env={"BROWSER": "false"})
    assert result.returncode == 0
    assert f"No web browser to open it here: the page is {tmp_path / 'page.html'}" in result.stderr


def test_enrich_offline_with_an_empty_cache_enriches_what_it_can(tmp_path):
    (tmp_path / "lib.bib").write_text(
        "@article{a, title={Denoising Diffusion Probabilistic Models}, author={Ho, Jonathan}, year=2020,\n"
        "  eprint={2006.11239}, archivePrefix={arXiv}}\n"
        "@article{b, title={A paper with a DOI}, author={Nobody, Ann}, year=2020, doi={10.1000/xyz}}\n",
        encoding="utf-8")
    result = litrank("enrich", "lib.bib", "--offline", "-o", "out.bib", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "offline: 2 papers could not be looked up (the cache holds no answer for them)" in result.stderr
    assert (tmp_path / "out.bib").read_text(encoding="utf-8").count("@article") == 2
    assert (tmp_path / "lib.bib").read_text(encoding="utf-8").startswith("@article{a,")  # never modified


def test_the_readme_points_no_user_at_the_developers_data():
    assert "../shared" not in (REPO / "examples" / "README.md").read_text(encoding="utf-8")
