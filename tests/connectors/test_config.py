"""litrank.toml: defaults from the working directory or the user config directory, flags win,
`litrank config show` says where each setting comes from, and bad settings are one-line errors."""
from __future__ import annotations

import json

from click.testing import CliRunner

from recommender.cli import main
from recommender.cli.common import settings_default_map
from tests.conftest import EXAMPLE_LIBRARY


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_without_a_file_the_built_in_defaults_hold(tmp_path, monkeypatch):
    monkeypatch.delenv("LITRANK_CONFIG")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    shown = json.loads(run("config", "show", "--format", "json").stdout)
    assert shown["file"] is None and str(tmp_path / "litrank.toml") in shown["looked_in"]
    assert {key: value["from"] for key, value in shown["settings"].items()} == dict.fromkeys(
        ["library", "collection", "model", "top", "embedder", "zotero.to"], "built-in default")


def test_the_working_directory_file_sets_defaults_and_flags_win(tmp_path, monkeypatch):
    monkeypatch.delenv("LITRANK_CONFIG")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "litrank.toml").write_text(f'library = "{EXAMPLE_LIBRARY}"\ntop = 3\nmodel = "similarity"\n'
                                           '[zotero]\nto = "Reading list"\n', encoding="utf-8")
    table = run("config", "show")
    assert "top         3  [" in table.stdout and "litrank.toml]" in table.stdout
    assert "collection  the bundled ICML 2026 list  [built-in default]" in table.stdout
    ranked = run("rank", "--format", "jsonl")
    assert ranked.exit_code == 0 and len(ranked.stdout.splitlines()) == 3
    assert "Ranked by tfidf-similarity-v1." in ranked.stderr and "bundled example library" not in ranked.stderr
    flags = run("rank", "--format", "jsonl", "-n", "5", "--model", "hybrid")
    assert len(flags.stdout.splitlines()) == 5 and "Ranked by hybrid" in flags.stderr
    default_map, settings = settings_default_map(main)
    assert default_map["sync"]["to"] == "Reading list" and default_map["rank"]["top"] == 3
    assert settings.path == tmp_path / "litrank.toml"


def test_the_user_config_directory_is_the_fallback(tmp_path, monkeypatch):
    monkeypatch.delenv("LITRANK_CONFIG")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "config" / "litrank").mkdir(parents=True)
    (tmp_path / "config" / "litrank" / "litrank.toml").write_text("top = 2\n", encoding="utf-8")
    assert len(run("rank", "--format", "jsonl").stdout.splitlines()) == 2


def test_bad_settings_are_one_line_errors(tmp_path, monkeypatch):
    path = tmp_path / "litrank.toml"
    monkeypatch.setenv("LITRANK_CONFIG", str(path))
    for text, message in [('tops = 3\n', "unknown setting 'tops'"), ('top = "many"\n', "top must be int"),
                          ('top = \n', "not valid TOML"), ('[zotero]\ncollection = "x"\n', "unknown setting zotero.collection"),
                          ('library = [1, 2]\n', "library must be str or a list of strings")]:
        path.write_text(text, encoding="utf-8")
        result = run("rank")
        assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.stderr
    monkeypatch.setenv("LITRANK_CONFIG", str(tmp_path / "missing.toml"))
    assert "no such settings file" in run("config", "show").stderr
