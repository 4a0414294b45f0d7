"""`-o` never replaces what is not a regular file: symlinks are written through, pipes and
devices written directly, `-` and /dev/stdout are standard output; for every writer."""
from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

import connectors
from recommender.paper import Paper
from tests.conftest import REPO


def litrank(*arguments: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "recommender", "-q", *arguments], capture_output=True, cwd=cwd,
                          check=False, timeout=300)


class PipeReader:
    """A reader on a named pipe, as `cat out.jsonl` would be: what arrived, once the writer closes."""

    def __init__(self, path: Path) -> None:
        self.path, self.data = path, b""
        self.thread = threading.Thread(target=self._read, args=(path,), daemon=True)
        self.thread.start()

    def _read(self, path: Path) -> None:
        with open(path, "rb") as handle:
            self.data = handle.read()

    def result(self) -> bytes:
        """What arrived; a writer that never came is stood in for, so the reader never hangs."""
        self.thread.join(timeout=5)
        if self.thread.is_alive():
            os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
            self.thread.join(timeout=60)
        return self.data


def test_a_symlink_is_written_through_and_stays_a_link(tmp_path):
    target = tmp_path / "real" / "reading-list.bib"
    target.parent.mkdir()
    target.write_text("% old\n", encoding="utf-8")
    link = tmp_path / "link.bib"
    link.symlink_to(target)
    result = litrank("rank", "-n", "3", "-o", str(link), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text(encoding="utf-8").count("@inproceedings") == 3
    assert not list(target.parent.glob(".*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def test_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "picks.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    assert litrank("rank", "-n", "2", "-o", str(link), cwd=tmp_path).returncode == 0
    assert link.is_symlink() and len(json.loads((tmp_path / "elsewhere.json").read_text(encoding="utf-8"))) == 2


def test_a_named_pipe_gets_the_bytes_and_stays_a_pipe(tmp_path):
    pipe = tmp_path / "out.jsonl"
    os.mkfifo(pipe)
    reader = PipeReader(pipe)
    result = litrank("rank", "-n", "4", "-o", str(pipe), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = reader.result().decode("utf-8").splitlines()
    assert [json.loads(line)["rank"] for line in lines] == [1, 2, 3, 4]
    assert stat.S_ISFIFO(pipe.lstat().st_mode)
    assert list(tmp_path.iterdir()) == [pipe]  # no temporary file beside it


def test_dev_null_stays_a_device(tmp_path):
    before = os.stat("/dev/null")
    result = litrank("rank", "-n", "2", "-o", "/dev/null", "-f", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_a_character_device_named_like_a_file_keeps_its_kind(tmp_path):
    device = tmp_path / "x.json"
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
    except PermissionError:
        pytest.skip("making a device node needs root")
    assert litrank("rank", "-n", "2", "-o", str(device), cwd=tmp_path).returncode == 0
    assert stat.S_ISCHR(device.lstat().st_mode)


@pytest.mark.parametrize("name", ["-", "/dev/stdout"])
def test_dash_and_dev_stdout_are_standard_output(tmp_path, name):
    result = litrank("rank", "-n", "3", "-o", name, "-f", "jsonl", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)["rank"] for line in result.stdout.decode("utf-8").splitlines()] == [1, 2, 3]
    table = litrank("rank", "-n", "2", "-o", name, cwd=tmp_path)  # no format given: the table
    assert table.returncode == 0 and b"closest in your library" in table.stdout
    assert list(tmp_path.iterdir()) == []


def test_every_writer_goes_through_a_pipe(tmp_path):
    """report, index, affinity, fetch, the plugin's build: each keeps a pipe a pipe."""
    library = REPO / "examples" / "diffusion-library.bib"
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "me.bib").write_bytes(library.read_bytes())
    jobs = {
        "page.html": ("report", "-n", "2", "-o"),
        "c.litrank": ("index", str(REPO / "examples" / "icml2026"), "-o"),
        "scores.csv": ("affinity", "--profiles", str(tmp_path / "profiles"), "-c", str(REPO / "examples" / "icml2026"),
                       "-n", "2", "-o"),
        "papers.jsonl": ("fetch", str(REPO / "examples" / "icml2026"), "-o"),
        "litrank.xpi": ("zotero-plugin", "build", "-o"),
    }
    for name, arguments in jobs.items():
        pipe = tmp_path / name
        os.mkfifo(pipe)
        reader = PipeReader(pipe)
        result = litrank(*arguments, str(pipe), cwd=tmp_path)
        data = reader.result()
        assert result.returncode == 0, (name, result.stderr)
        assert stat.S_ISFIFO(pipe.lstat().st_mode), name
        assert data, name
        if name.endswith((".litrank", ".xpi")):
            assert zipfile.is_zipfile(io.BytesIO(data)), name
        if name == "page.html":
            assert data.lstrip().lower().startswith(b"<!doctype html")


def test_the_connectors_writers_keep_links_and_pipes(tmp_path):
    papers = [Paper(id="p1", title="A paper", abstract="About things.", authors=["Ada Lovelace"], year=2024)]
    target = tmp_path / "real.bib"
    link = tmp_path / "link.bib"
    link.symlink_to(target)
    connectors.dump(papers, link)
    assert link.is_symlink() and "A paper" in target.read_text(encoding="utf-8")
    pipe = tmp_path / "out.csv"
    os.mkfifo(pipe)
    reader = PipeReader(pipe)
    connectors.dump(papers, pipe)
    assert b"A paper" in reader.result() and stat.S_ISFIFO(pipe.lstat().st_mode)


def test_what_cannot_be_written_is_one_line(tmp_path):
    (tmp_path / "picks.json").mkdir()
    result = litrank("rank", "-o", str(tmp_path / "picks.json"), cwd=tmp_path)
    assert result.returncode == 2 and b"directory" in result.stderr and b"Traceback" not in result.stderr
    with pytest.raises(connectors.SourceError, match="is a directory"):
        connectors.write_text(tmp_path / "picks.json", "x")
    import socket

    server = socket.socket(socket.AF_UNIX)
    address = tmp_path / "s.json"
    try:
        server.bind(str(address))
    except OSError:
        pytest.skip("no Unix sockets here")
    with pytest.raises(connectors.SourceError, match="not a regular file"):
        connectors.write_text(address, "x")
    assert stat.S_ISSOCK(address.lstat().st_mode)
    server.close()
    report = litrank("report", "-o", "-", "--open", cwd=tmp_path)
    assert report.returncode == 2 and b"--open needs the page in a file" in report.stderr
