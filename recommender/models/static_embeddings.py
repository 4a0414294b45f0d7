"""Static sentence embeddings: a token table distilled from all-MiniLM-L6-v2, numpy and ``tokenizers`` only.

``StaticEmbedder().embed(texts)`` returns one float32, L2-normalised row per text, like
:class:`recommender.models.embeddings.SentenceEmbedder`, without torch or sentence-transformers:
a text's vector is the mean of its WordPiece tokens' rows in a table of 29,525 tokens × 256
dimensions (float16, 15 MB) that ``benchmarks/distil_static_embedder.py`` distilled with
model2vec from the weights of the embeddings extra, then fitted to that model's vectors of
20,000 conference abstracts (``--fit-texts``). It lies in ``recommender/data/static-minilm/``
(``tokenizer.json``, ``embeddings.npy``, ``config.json``). Thousands of texts a second on two
cores (``benchmarks/bench_embeddings.py --model static``), so there is no disk cache. The token
ids are always the tokenizer's own, got faster: ASCII texts are split into words here and each
distinct word tokenised once (:func:`ascii_token_ids`), other plain texts skip BERT's normaliser
(:func:`plain_text_tokenizer`). The tokenizer needs the ``tokenizers`` package (HuggingFace's
Rust tokenizer, a small wheel without torch).
"""
from __future__ import annotations

import json
import re
import threading
from importlib import resources
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy import sparse

from recommender.runtime import release_free_memory, usable_cores

TABLE_FOLDER = "static-minilm"
MODEL_ID_PREFIX = "static:"  # a static table's model_id: "static:<name>#<sha256 prefix>"
_BATCH = 1024  # texts per tokenizer call and per sparse product
# ASCII texts go word by word (:func:`ascii_token_ids`) on machines of at most this many cores.
# It takes a quarter of the tokenizer's processor time (26,060 abstracts: 1.1 s against 4.1-4.4 s)
# but one core and the interpreter lock, which the collection's word counting needs meanwhile:
# on two cores 30,000 papers rank 0.9-1.5 s sooner; with many cores the tokenizer's own threads
# would finish behind that counting and leave it the lock (reasoned, not measured: the
# benchmark machine has two cores).
WORD_BY_WORD_MAX_CORES = 4
# Loaded tables by folder: a process loads each once (tokenizer, table as stored (float16 or
# float32), plain-text tokenizer or None).
_LOADED: dict[str, tuple[object, np.ndarray, object]] = {}
_LOCK = threading.Lock()


def token_means(tokenizer, texts: Sequence[str], n_tokens: int, plain_tokenizer=None,
                word_cache: dict | None = None) -> sparse.csr_matrix:
    """Each text's mean over its tokens, as a float32 CSR matrix of shape ``(len(texts),
    n_tokens)``: a text's row times a table is the mean of its tokens' rows (special tokens and
    ``[UNK]`` left out; a text without any token an empty row). The embedder takes its vectors
    so, and ``benchmarks/distil_static_embedder.py`` fits the table through it.
    ``plain_tokenizer`` (:func:`plain_text_tokenizer`) tokenises the plain texts, the same ids;
    ``word_cache``: see :func:`token_ids`."""
    unknown = tokenizer.token_to_id("[UNK]")
    rows = []
    for ids in token_ids(tokenizer, texts, plain_tokenizer, word_cache):
        ids = np.asarray(ids, dtype=np.int64)
        rows.append(ids[ids != unknown] if unknown is not None else ids)
    lengths = np.fromiter((len(ids) for ids in rows), dtype=np.int64, count=len(rows))
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    weights = np.repeat(1.0 / np.maximum(lengths, 1), lengths).astype(np.float32)
    return sparse.csr_matrix((weights, indices, indptr), shape=(len(rows), n_tokens))


def widened_product(means: sparse.csr_matrix, table: np.ndarray) -> np.ndarray:
    """``means @ table`` in float32, shape ``(means.shape[0], table.shape[1])``, with only the
    table rows ``means`` uses widened to float32: the numbers of the product with the whole
    table widened, bit for bit (each row's entries are added in their stored order, and
    renumbering the columns in order keeps it)."""
    present = np.zeros(table.shape[0], dtype=bool)
    present[means.indices] = True
    used = np.flatnonzero(present)
    local = np.cumsum(present, dtype=np.int32) - 1  # a used row's place among them (a table, not a sort)
    narrow = sparse.csr_matrix((means.data, local[means.indices], means.indptr), shape=(means.shape[0], len(used)))
    return np.asarray(narrow @ table[used].astype(np.float32), dtype=np.float32)


# Printable ASCII, tabs and line breaks, typographic dashes, quotes and ellipsis, the
# multiplication sign and the unaccented Greek letters: what BERT's normaliser (control
# characters dropped, whitespace made spaces, CJK characters spaced, accents stripped, lower
# case) changes in such a text is its case alone, and whitespace the pre-tokeniser splits at
# either way. None of these characters decomposes (as "≠" does) or is a control, format, space
# or CJK character (tested). 97% of 14,397 conference abstracts are plain so; 77% are ASCII.
_PLAIN_TEXT = re.compile("[\t\n\r\x20-\x7e\u2013\u2014\u2018\u2019\u201c\u201d\u2026\u00d7"
                         "\u0391-\u03a1\u03a3-\u03a9\u03b1-\u03c9]*")


# Printable ASCII, tabs and line breaks: lower-cased, such a text splits into BERT's pre-tokens
# by _ASCII_PRE_TOKEN (all of ASCII's other printable characters are punctuation to BERT).
_PLAIN_ASCII = re.compile("[\t\n\r\x20-\x7e]*")
_ASCII_PRE_TOKEN = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")


def token_ids(tokenizer, texts: Sequence[str], plain_tokenizer=None, word_cache: dict | None = None) -> list[list[int]]:
    """Each text's token ids (no special tokens): with ``plain_tokenizer``, the ASCII texts (77%
    of conference abstracts) word by word (:func:`ascii_token_ids`, on machines of at most
    :data:`WORD_BY_WORD_MAX_CORES` cores; ``word_cache`` keeps each word's ids across calls),
    the other plain texts (:data:`_PLAIN_TEXT`) through ``plain_tokenizer``, the rest through
    ``tokenizer``; the same ids as ``tokenizer`` gives."""
    texts = list(texts)
    if plain_tokenizer is None:
        return _encoded_ids(tokenizer, texts)
    word_by_word = usable_cores() <= WORD_BY_WORD_MAX_CORES and splits_like_bert(plain_tokenizer)
    kinds = [0 if word_by_word and _PLAIN_ASCII.fullmatch(text) else 1 if _PLAIN_TEXT.fullmatch(text) else 2
             for text in texts]
    ids: list = [None] * len(texts)
    encoders = (lambda chosen: ascii_token_ids(plain_tokenizer, chosen, word_cache),
                lambda chosen: _encoded_ids(plain_tokenizer, chosen), lambda chosen: _encoded_ids(tokenizer, chosen))
    for kind, encode in enumerate(encoders):
        positions = [i for i, found in enumerate(kinds) if found == kind]
        for position, encoded in zip(positions, encode([texts[i] for i in positions])):
            ids[position] = encoded
    return ids


def ascii_token_ids(plain_tokenizer, texts: Sequence[str], word_cache: dict | None = None) -> list[list[int]]:
    """Token ids of printable-ASCII texts, each distinct word tokenised once.

    WordPiece tokenises every pre-token on its own, and in ASCII BERT's pre-tokens are the runs
    of letters and digits and each other printable character alone; so a text's ids are its
    words' ids one after the other, cut at the tokenizer's truncation length: the ids
    ``plain_tokenizer`` gives the whole text (tested on 14,397 abstracts). Each word goes through
    the whole tokenizer, whose pre-tokeniser would split it again, so the split here must only
    never cut inside one of BERT's pre-tokens. A word is tokenised once a call (``word_cache``:
    word -> ids, for longer), not once a text: 30,000 abstracts hold about 50,000 distinct words
    among 5 million; 1.1-1.3 s of one core against 2.2-2.6 s of the tokenizer's own two threads.
    """
    truncation = plain_tokenizer.truncation
    limit = truncation["max_length"] if truncation else None
    cache = {} if word_cache is None else word_cache
    split = _ASCII_PRE_TOKEN.findall
    out = []
    for text in texts:
        ids: list[int] = []
        for word in split(text.lower()):
            known = cache.get(word)
            if known is None:
                known = cache[word] = plain_tokenizer.encode(word, add_special_tokens=False).ids
            ids.extend(known)
        out.append(ids[:limit] if limit is not None and len(ids) > limit else ids)
    return out


def splits_like_bert(tokenizer) -> bool:
    """Whether ``tokenizer`` pre-tokenises as BERT does and truncates at the end (or not at
    all), for which :func:`ascii_token_ids` gives its ids."""
    from tokenizers import pre_tokenizers

    truncation = tokenizer.truncation
    return isinstance(tokenizer.pre_tokenizer, pre_tokenizers.BertPreTokenizer) and (
        not truncation or truncation.get("direction", "right") == "right")


def _encoded_ids(tokenizer, texts: list[str]) -> list[list[int]]:
    if not texts:
        return []
    encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)  # no offsets: faster
    return [encoding.ids for encoding in encode(texts, add_special_tokens=False)]


def plain_text_tokenizer(tokenizer):
    """A copy of a BERT tokenizer whose normaliser only lower-cases: on plain texts
    (:data:`_PLAIN_TEXT`) the same ids in about two thirds of the time (3,000 abstracts: 0.28
    against 0.42 s). None when ``tokenizer``'s normaliser is not BERT's lower-casing one, for
    which that holds."""
    from tokenizers import Tokenizer, normalizers

    normalizer = tokenizer.normalizer
    if not (isinstance(normalizer, normalizers.BertNormalizer) and normalizer.lowercase
            and normalizer.strip_accents in (None, True)):
        return None
    plain = Tokenizer.from_str(tokenizer.to_str())
    plain.normalizer = normalizers.Lowercase()
    return plain


def is_static_model_id(model_id) -> bool:
    """True for a static table's id (:attr:`StaticEmbedder.model_id`, an index's ``embedder_id``)."""
    return str(model_id or "").startswith(MODEL_ID_PREFIX)


class StaticEmbedderUnavailable(RuntimeError):
    """The table or the ``tokenizers`` package is missing; the message says which."""


def bundled_table_dir() -> Path:
    """``recommender/data/static-minilm``: the table shipped with litrank."""
    return Path(str(resources.files("recommender.data").joinpath(TABLE_FOLDER)))


def static_embedder_available(path: str | Path | None = None) -> bool:
    """True when ``tokenizers`` is importable and the table's three files are present."""
    import importlib.util

    folder = Path(path) if path is not None else bundled_table_dir()
    try:
        has_tokenizers = importlib.util.find_spec("tokenizers") is not None
    except (ImportError, ValueError):
        has_tokenizers = False
    return has_tokenizers and all((folder / name).is_file() for name in ("tokenizer.json", "embeddings.npy",
                                                                        "config.json"))


class StaticEmbedder:
    """Embeds texts as the mean of their tokens' rows in a distilled static table.

    Parameters
    ----------
    path : str or Path, optional
        A folder with ``tokenizer.json``, ``embeddings.npy`` and ``config.json`` as written by
        ``benchmarks/distil_static_embedder.py``. Default: the bundled table (:func:`bundled_table_dir`).

    Attributes
    ----------
    config : dict
        The table's ``config.json`` (source model, settings, sha256 of the table).
    n_embedded, n_cached : int
        Distinct texts of the last :meth:`embed` call (all embedded: there is no cache).
    """

    # Safe to call from another thread (the collection index embeds while it counts words): the
    # table loads under a lock, each call keeps its own word cache, and the tokenizer releases the
    # GIL while it encodes (splitting ASCII texts into words holds it: WORD_BY_WORD_MAX_CORES).
    thread_safe = True

    def __init__(self, path: str | Path | None = None):
        self.path = (Path(path).expanduser() if path is not None else bundled_table_dir()).resolve()
        try:
            self.config = json.loads((self.path / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise StaticEmbedderUnavailable(f"no static embedding table in {self.path} ({exc})") from None
        self.max_tokens = int(self.config.get("max_tokens", 512))
        self._tokenizer, self._table, self._plain_tokenizer = None, None, None
        self.n_embedded = self.n_cached = 0

    @property
    def model_id(self) -> str:
        """Stable name of the table (its name and a prefix of its sha256): part of every cache key."""
        digest = str(self.config.get("embeddings_sha256", ""))[:12]
        return f"{MODEL_ID_PREFIX}{self.config.get('name', self.path.name)}#{digest}"

    @property
    def dim(self) -> int:
        return int(self.config["dims"]) if "dims" in self.config else self._load()[1].shape[1]

    def _load(self) -> tuple[object, np.ndarray]:
        if self._table is not None:
            return self._tokenizer, self._table
        key = str(self.path)
        with _LOCK:
            if key not in _LOADED:
                try:
                    from tokenizers import Tokenizer
                except ImportError as exc:
                    raise StaticEmbedderUnavailable(f"the static embedder needs the tokenizers package: "
                                                    f"pip install tokenizers ({exc})") from None
                try:
                    tokenizer = Tokenizer.from_file(str(self.path / "tokenizer.json"))
                    table = np.load(self.path / "embeddings.npy", allow_pickle=False)
                except Exception as exc:  # OSError, ValueError, or tokenizers' own exception type
                    raise StaticEmbedderUnavailable(f"cannot load the static table in {self.path} ({exc})") from None
                if table.ndim != 2 or table.shape[0] != tokenizer.get_vocab_size():
                    raise StaticEmbedderUnavailable(f"{self.path}: {table.shape} rows for "
                                                    f"{tokenizer.get_vocab_size()} tokens")
                tokenizer.no_padding()
                tokenizer.enable_truncation(self.max_tokens)
                plain = plain_text_tokenizer(tokenizer)
                if plain is not None:
                    plain.no_padding()
                    plain.enable_truncation(self.max_tokens)
                # Kept as stored (the bundled table is float16: 15 MB, not 30 MB held through a
                # ranking); each batch widens only the rows its texts use (:meth:`_encode`).
                kept = table.dtype if table.dtype in (np.float16, np.float32) else np.float32
                _LOADED[key] = (tokenizer, np.ascontiguousarray(table, dtype=kept), plain)
            self._tokenizer, self._table, self._plain_tokenizer = _LOADED[key]
        return self._tokenizer, self._table

    def _encode(self, texts: list[str], word_cache: dict | None = None) -> np.ndarray:
        tokenizer, table = self._load()
        vectors = widened_product(token_means(tokenizer, texts, table.shape[0], self._plain_tokenizer, word_cache),
                                  table)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms > 0, norms, 1).astype(np.float32)  # no known token: a zero row

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts``: ndarray of shape ``(len(texts), dim)``, float32, unit rows (a text
        without any token the table knows gets a zero row)."""
        texts = [str(text) for text in texts]
        unique = list(dict.fromkeys(texts))
        _, table = self._load()
        if not unique:
            self.n_embedded = self.n_cached = 0
            return np.zeros((0, table.shape[1]), dtype=np.float32)
        word_cache: dict = {}  # one call's words: tokenised once for all its batches, then let go
        vectors = np.concatenate([self._encode(unique[start:start + _BATCH], word_cache)
                                  for start in range(0, len(unique), _BATCH)])
        del word_cache
        release_free_memory()  # what the tokenizer's threads freed stays in their arenas otherwise
        self.n_embedded, self.n_cached = len(unique), 0
        if len(unique) == len(texts):
            return vectors
        position = {text: i for i, text in enumerate(unique)}
        return vectors[[position[text] for text in texts]]

    def close(self) -> None:
        """Nothing to close (the same interface as SentenceEmbedder)."""

    def __repr__(self) -> str:
        return f"StaticEmbedder({self.model_id!r})"
