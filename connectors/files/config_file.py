"""litrank's settings file: ``litrank.toml`` in the working directory, else in the user config
directory (``platformdirs.user_config_dir("litrank")``; ``$LITRANK_CONFIG`` names another file).

Settings (all optional)::

    library = ["refs.bib", "zotero:local"]   # -l, for every command that reads a library
    collection = "icml2026.jsonl"             # -c
    model = "hybrid"                          # --model
    top = 30                                  # -n
    embedder = "none"                         # --embedder

    [zotero]
    to = "Reading list: ICML 2026"            # litrank sync --to

:func:`read` returns the settings with the file they came from; the CLI turns them into
defaults that its flags override.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from connectors.errors import SourceError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FILE_NAME = "litrank.toml"
KEYS = {"library": (str, list), "collection": (str, list), "model": (str,), "top": (int,), "embedder": (str,)}
ZOTERO_KEYS = {"to": (str,)}


@dataclass
class Settings:
    """The values set in a settings file, and that file (None when there is none)."""

    values: dict = field(default_factory=dict)
    path: Path | None = None


def candidates() -> list[Path]:
    """Where a settings file is looked for, first found wins."""
    if os.environ.get("LITRANK_CONFIG"):
        return [Path(os.environ["LITRANK_CONFIG"]).expanduser()]
    import platformdirs

    return [Path.cwd() / FILE_NAME, Path(platformdirs.user_config_dir("litrank")) / FILE_NAME]


def _check(path: Path, key: str, value, kinds) -> None:
    if not isinstance(value, kinds) or isinstance(value, bool) or (
            isinstance(value, list) and not all(isinstance(item, str) for item in value)):
        wanted = " or ".join("a list of strings" if kind is list else kind.__name__ for kind in kinds)
        raise SourceError(f"{path}: {key} must be {wanted}, not {value!r}")


def read() -> Settings:
    """The first settings file of :func:`candidates`, checked (an unknown key is an error)."""
    for path in candidates():
        if not path.is_file():
            continue
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise SourceError(f"{path}: cannot read ({exc})") from None
        except tomllib.TOMLDecodeError as exc:
            raise SourceError(f"{path}: not valid TOML ({exc})") from None
        values = {}
        for key, value in data.items():
            if key == "zotero" and isinstance(value, dict):
                for zotero_key, zotero_value in value.items():
                    if zotero_key not in ZOTERO_KEYS:
                        raise SourceError(f"{path}: unknown setting zotero.{zotero_key} (known: "
                                          f"{', '.join('zotero.' + k for k in ZOTERO_KEYS)})")
                    _check(path, f"zotero.{zotero_key}", zotero_value, ZOTERO_KEYS[zotero_key])
                    values[f"zotero.{zotero_key}"] = zotero_value
                continue
            if key not in KEYS:
                raise SourceError(f"{path}: unknown setting {key!r} (known: {', '.join([*KEYS, 'zotero.to'])})")
            _check(path, key, value, KEYS[key])
            values[key] = [value] if key in ("library", "collection") and isinstance(value, str) else value
        return Settings(values, path)
    if os.environ.get("LITRANK_CONFIG"):
        raise SourceError(f"{os.environ['LITRANK_CONFIG']}: no such settings file ($LITRANK_CONFIG)")
    return Settings()
