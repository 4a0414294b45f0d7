import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import bibtexparser
import pytest
from bibtexparser.bparser import BibTexParser
from click.testing import CliRunner

from recommender.cli import main
from tests.conftest import DATA, EXAMPLE_LIBRARY, REPO, SEEDS, require

JSON_FIELDS = {"rank", "score", "id", "title", "title_derived", "authors", "year", "venue", "url", "abstract", "because"}


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_rank_without_arguments_uses_the_bundled_defaults():
    result = run("rank")
    assert result.exit_code == 0, result.stderr
    assert "bundled example library" in result.stderr and "bundled ICML 2026 list" in result.stderr
    rows = [line for line in result.stdout.splitlines() if line.strip()[:3].strip().isdigit()]
    assert [int(line.split()[0]) for line in rows] == list(range(1, 21))
    assert "Top 20 of 70 papers" in result.stdout
    assert "† title derived from the abstract" in result.stdout


def test_jsonl_of_the_whole_seed_collection_has_70_lines():
    result = run("rank", "-l", str(EXAMPLE_LIBRARY), "-c", str(require(SEEDS)), "-n", "0", "--format", "jsonl",
                 "--diversity", "0")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert len(lines) == 70
    picks = [json.loads(line) for line in lines]
    assert all(JSON_FIELDS <= set(pick) for pick in picks)
    assert [pick["rank"] for pick in picks] == list(range(1, 71))
    assert all(picks[i]["score"] >= picks[i + 1]["score"] for i in range(69))
    assert all(1 <= len(pick["because"]) <= 3 for pick in picks[:10])
    assert set(picks[0]["because"][0]) == {"id", "title", "similarity"}


def test_default_list_is_in_score_order_and_diversity_reorders_it():
    default = [json.loads(line) for line in run("rank", "-n", "0", "--format", "jsonl").stdout.splitlines()]
    diverse = [json.loads(line) for line in run("rank", "-n", "0", "--format", "jsonl", "--diversity", "0.5")
               .stdout.splitlines()]
    assert len(default) == len(diverse) == 70
    assert [pick["score"] for pick in default] == sorted((pick["score"] for pick in default), reverse=True)
    assert [pick["id"] for pick in diverse] != [pick["id"] for pick in default]
    assert {pick["id"] for pick in diverse} == {pick["id"] for pick in default}
    assert run("rank", "--diversity", "1.5").exit_code == 2


def test_bibtex_output_file_parses_completely(tmp_path):
    out = tmp_path / "out.bib"
    result = run("rank", "-l", str(EXAMPLE_LIBRARY), "-c", str(require(SEEDS)), "-n", "10", "-o", str(out))
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "Wrote 10 picks" in result.stderr
    database = bibtexparser.loads(out.read_text(encoding="utf-8"), BibTexParser(common_strings=True))
    assert len(database.entries) == 10
    assert not [c for c in database.comments if c.lstrip().startswith("@")]
    for entry in database.entries:
        assert "litrank: rank" in entry["note"] and "derived" in entry["note"].lower()
        assert entry["year"] == "2026"


def test_json_and_csv_outputs(tmp_path):
    out = tmp_path / "picks.json"
    assert run("rank", "-n", "3", "-o", str(out), "--explain").exit_code == 0
    picks = json.loads(out.read_text(encoding="utf-8"))
    assert len(picks) == 3 and picks[0]["because"][0]["terms"]
    result = run("rank", "-n", "4", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [row["rank"] for row in rows] == ["1", "2", "3", "4"] and "drivers" not in rows[0]
    explained = run("rank", "-n", "2", "--format", "csv", "--explain")  # the drivers get a column of their own
    assert explained.exit_code == 0, explained.stderr
    rows = list(csv.DictReader(io.StringIO(explained.stdout)))
    assert len(rows) == 2 and all(re.search(r"\([+-]\d", row["drivers"]) for row in rows)


def test_explain_table_shows_shared_terms():
    result = run("rank", "-n", "2", "--explain")
    assert result.exit_code == 0 and "why" in result.stdout
    assert "):" in result.stdout  # "Closest title (0.31): term, term"


def test_broken_bibtex_entry_is_named_and_the_rest_ranks():
    library = DATA / "broken-library.bib"
    result = run("rank", "-l", str(library), "-n", "5", "--format", "jsonl")
    assert result.exit_code == 0
    assert "rombach2022high" in result.stderr and ":44:" in result.stderr
    assert len(result.stdout.splitlines()) == 5


def test_papers_already_in_the_library_are_skipped_and_counted(tmp_path):
    collection = tmp_path / "mixed.jsonl"
    collection.write_text(
        json.dumps({"title": "Denoising Diffusion Probabilistic Models", "authors": ["Jonathan Ho"], "year": 2020}) + "\n"
        + json.dumps({"title": "A New Sampler", "abstract": "We speed up diffusion sampling with fewer steps."}) + "\n",
        encoding="utf-8")
    result = run("rank", "-l", str(EXAMPLE_LIBRARY), "-c", str(collection), "--format", "jsonl")
    assert result.exit_code == 0
    assert "1 paper already in your library was skipped." in result.stderr
    assert [json.loads(line)["title"] for line in result.stdout.splitlines()] == ["A New Sampler"]


@pytest.mark.parametrize("args, message", [
    (["-l", "no-such-file.bib"], "no-such-file.bib: no such file or directory"),
    (["-c", "pyproject.toml"], "unknown file format; supported formats"),
    (["-o", "picks.xyz"], "cannot tell the format"),
    (["-n", "-3"], "-3 is not in the range"),
    (["--format", "pdf"], "'pdf' is not one of"),
])
def test_bad_input_exits_2_with_one_clear_line(args, message, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    result = run("rank", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_help_everywhere():
    for args in (["--help"], ["rank", "--help"]):
        result = run(*args)
        assert result.exit_code == 0 and "Usage: " in result.stdout
    assert "--library" in run("rank", "--help").stdout


def test_installed_console_script_runs_as_a_subprocess(tmp_path):
    script = Path(sys.executable).with_name("litrank")
    if not script.exists():
        pytest.skip("the litrank console script is not installed in this environment (pip install -e .)")
    completed = subprocess.run([str(script), "rank", "-n", "10", "--format", "jsonl"], capture_output=True, text=True,
                               cwd=tmp_path, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert len(completed.stdout.splitlines()) == 10
    bad = subprocess.run([str(script), "rank", "-l", "missing.bib"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].startswith("Error: missing.bib")


def test_bundled_defaults_match_the_examples():
    from recommender import defaults

    assert defaults.bundled_library().read_bytes() == EXAMPLE_LIBRARY.read_bytes()
    bundled = sorted(p.read_bytes() for p in defaults.bundled_collection().glob("*.txt"))
    examples = sorted(p.read_bytes() for p in (EXAMPLE_LIBRARY.parent / "icml2026").glob("*.txt"))
    assert bundled == examples and len(bundled) == 4


def test_feedback_round_trip_through_the_cli():
    first = [json.loads(line) for line in run("rank", "-n", "0", "--format", "jsonl").stdout.splitlines()]
    disliked, liked = first[0]["id"], first[40]["id"]
    assert run("feedback", "--dislike", disliked, "--like", liked).exit_code == 0
    result = run("rank", "-n", "0", "--format", "jsonl")
    assert "Using 2 judgements of yours (1 liked, 1 disliked)." in result.stderr
    assert "1 disliked paper will not be recommended." in result.stderr
    assert "; re-ranked with your 2 judgements (1 liked, 1 disliked)." in result.stderr
    ids = [json.loads(line)["id"] for line in result.stdout.splitlines()]
    assert disliked not in ids and liked not in ids and len(ids) == 68
    ignored = run("rank", "-n", "0", "--format", "jsonl", "--no-feedback")
    assert disliked in ignored.stdout and "judgements" not in ignored.stderr
    report = run("rank", "-n", "5", "--format", "html")
    assert "re-ranked with your 2 judgements (1 liked, 1 disliked)" in report.stdout


def test_model_choice_and_embedder_without_the_extra(monkeypatch):
    result = run("rank", "-n", "3", "--model", "similarity", "--format", "jsonl")
    assert result.exit_code == 0 and "Ranked by tfidf-similarity-v1." in result.stderr
    assert "Ranked by hybrid: words and character n-grams with pseudo-relevance feedback." in \
        run("rank", "-n", "1").stderr
    assert "Ranked by learned: LightGBM trained on your 54 papers" in run("rank", "-n", "1", "--model", "learned").stderr
    monkeypatch.setattr("recommender.models.embeddings.embeddings_available", lambda: False)
    missing = run("rank", "--embedder", "default")
    assert missing.exit_code == 2 and "pip install 'litrank[embeddings]'" in missing.stderr


def test_bibtex_keyword_judgements_are_read(tmp_path):
    text = EXAMPLE_LIBRARY.read_text(encoding="utf-8").replace(
        "keywords = {diffusion, DDPM,", "keywords = {litrank:disliked, diffusion, DDPM,", 1)
    library = tmp_path / "tagged.bib"
    library.write_text(text, encoding="utf-8")
    result = run("rank", "-l", str(library), "-n", "3")
    assert result.exit_code == 0
    assert "Using 1 judgement of yours (0 liked, 1 disliked)." in result.stderr
    assert "ranked against 53 papers" in result.stdout


def test_progress_lines_never_break_a_run(monkeypatch):
    import rich.console

    shown = []
    original = rich.console.Console.status
    monkeypatch.setattr("recommender.cli.common._shows_progress", lambda: True)  # as on a terminal
    monkeypatch.setattr(rich.console.Console, "status",
                        lambda self, message, **kw: shown.append(str(message)) or original(self, message, **kw))
    result = run("rank", "-n", "2", "--format", "jsonl")
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 2
    assert shown == ["Reading the library...", "Reading the collection...", "Ranking 70 papers against 54..."]
    quiet = run("-q", "rank", "-n", "1")
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_python_dash_m_runs_the_same_command():
    result = subprocess.run([sys.executable, "-m", "recommender", "--help"], capture_output=True, text=True,
                            check=False, cwd=REPO)
    assert result.returncode == 0 and result.stdout.startswith("Usage: litrank [OPTIONS] COMMAND")
    assert "affinity" in result.stdout and "index" in result.stdout


def test_the_console_entry_keeps_exit_codes_and_leaves_the_last_collections_out(monkeypatch, capsys):
    import gc

    from recommender.cli import run

    for argv, code in ((["litrank", "--version"], 0), (["litrank", "rank", "--top", "-3"], 2)):
        monkeypatch.setattr(sys, "argv", argv)
        try:
            with pytest.raises(SystemExit) as exited:
                run()
            assert exited.value.code == code
            assert gc.get_freeze_count() > 0  # what the process made is not walked at exit
        finally:
            gc.unfreeze()
    assert "litrank" in capsys.readouterr().out
