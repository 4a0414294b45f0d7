"""The Zotero plugin as an ``.xpi`` file (a zip Zotero 7 and later install from Tools → Plugins),
and the update manifest Zotero reads from the plugin's ``update_url``.

The plugin's files live in ``plugin/`` beside this module. The build is reproducible: the same
files and interpreter give the same bytes (sorted names, fixed timestamps and permissions). The
Python interpreter that builds it becomes the plugin's default ``extensions.litrank.python``
preference, so that the plugin runs the litrank it was built with.
"""
from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

from connectors._io import atomic_write_binary, atomic_write_text
from connectors.errors import SourceError

PLUGIN_DIR = Path(__file__).resolve().parent / "plugin"
PYTHON_PREF = "extensions.litrank.python"
DEFAULT_PREFS = "prefs.js"
# Zip entries carry this date (the earliest a zip can hold), so that a rebuild gives the same bytes.
FIXED_DATE = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class BuiltPlugin:
    """What :func:`build_xpi` wrote: the add-on id and version, the sha256 of the file, its files."""

    addon_id: str
    version: str
    sha256: str
    files: tuple[str, ...]


def plugin_files(directory: Path = PLUGIN_DIR) -> list[Path]:
    """The plugin's files, in archive order (sorted by their path inside the plugin)."""
    return sorted((path for path in directory.rglob("*") if path.is_file() and "__pycache__" not in path.parts
                   and not path.name.startswith(".")), key=lambda path: path.relative_to(directory).as_posix())


def manifest(directory: Path = PLUGIN_DIR) -> dict:
    """The plugin's ``manifest.json``."""
    return json.loads((directory / "manifest.json").read_text(encoding="utf-8"))


def _prefs(text: str, python: str) -> str:
    """``prefs.js`` with the interpreter line set to ``python`` (added when missing)."""
    line = f"pref({json.dumps(PYTHON_PREF)}, {json.dumps(python)});"
    lines = [line if current.strip().startswith(f"pref({json.dumps(PYTHON_PREF)}") else current
             for current in text.splitlines()]
    if line not in lines:
        lines.append(line)
    return "\n".join(lines) + "\n"


def xpi_bytes(python: str, version: str, directory: Path = PLUGIN_DIR) -> tuple[bytes, dict]:
    """The ``.xpi`` for ``python`` (the interpreter the plugin runs) and ``version`` (the plugin's
    version, litrank's own), with its manifest."""
    if not (directory / "manifest.json").is_file():
        raise SourceError(f"{directory}: the plugin's files are missing (no manifest.json)")
    meta = manifest(directory)
    meta["version"] = version
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in plugin_files(directory):
            name = path.relative_to(directory).as_posix()
            data = path.read_bytes()
            if name == "manifest.json":
                data = (json.dumps(meta, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
            elif name == DEFAULT_PREFS:
                data = _prefs(data.decode("utf-8"), python).encode("utf-8")
            info = zipfile.ZipInfo(name, date_time=FIXED_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, whatever builds it
            info.external_attr = 0o644 << 16
            archive.writestr(info, data, compresslevel=9)
    return buffer.getvalue(), meta


def update_manifest(meta: dict, sha256: str, update_link: str) -> dict:
    """Zotero's update manifest (``updates.json``) offering this build at ``update_link``."""
    zotero = meta["applications"]["zotero"]
    return {"addons": {zotero["id"]: {"updates": [{
        "version": meta["version"], "update_link": update_link, "update_hash": f"sha256:{sha256}",
        "applications": {"zotero": {key: zotero[key] for key in ("strict_min_version", "strict_max_version")
                                    if key in zotero}},
    }]}}}


def build_xpi(target: str | Path, python: str, version: str, update_json: str | Path | None = None,
              update_link: str | None = None, directory: Path = PLUGIN_DIR) -> BuiltPlugin:
    """Write the plugin to ``target`` (atomically) and, when asked, its update manifest.

    ``update_link`` (where the ``.xpi`` will be downloaded from) defaults to the file's name
    beside the manifest's ``update_url``.
    """
    data, meta = xpi_bytes(python, version, directory)
    target = Path(target).expanduser()
    atomic_write_binary(target, lambda handle: handle.write(data))
    digest = hashlib.sha256(data).hexdigest()
    if update_json is not None:
        link = update_link or meta["applications"]["zotero"]["update_url"].rsplit("/", 1)[0] + "/" + target.name
        atomic_write_text(Path(update_json).expanduser(),
                          json.dumps(update_manifest(meta, digest, link), indent=2) + "\n")
    names = tuple(path.relative_to(directory).as_posix() for path in plugin_files(directory))
    return BuiltPlugin(meta["applications"]["zotero"]["id"], meta["version"], digest, names)
