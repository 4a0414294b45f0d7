"""recommender.models.static_embeddings: the static table distilled from all-MiniLM-L6-v2.

Every test loads the shipped table (recommender/data/static-minilm/); one runs the embedder in a
subprocess where torch, transformers, sentence-transformers and model2vec cannot be imported.
"""
from __future__ import annotations

import json
import subprocess
import sys
import unicodedata

import numpy as np
import pytest

from recommender.features.index_features import embedder_id
from recommender.models.hybrid import HybridModel
from recommender.models.static_embeddings import (
    StaticEmbedder,
    StaticEmbedderUnavailable,
    bundled_table_dir,
    static_embedder_available,
)
from recommender.paper import Paper
from tests.conftest import REPO

DIFFUSION = "Denoising diffusion probabilistic models generate images by learning to reverse a noising process."
DENOISING = "A score-based denoising diffusion model synthesises high-quality samples from Gaussian noise."
PROTEIN = "We predict the three-dimensional structure of proteins from their amino-acid sequence."
TEXTS = [DIFFUSION, DENOISING, PROTEIN, "diffusion model", "denoising diffusion", "protein folding"]


@pytest.fixture(scope="module")
def embedder() -> StaticEmbedder:
    return StaticEmbedder()


def test_the_shipped_table_is_small_and_described():
    folder = bundled_table_dir()
    assert static_embedder_available()
    files = {path.name: path.stat().st_size for path in folder.iterdir() if path.is_file()}
    assert set(files) == {"tokenizer.json", "embeddings.npy", "config.json"}
    assert sum(files.values()) <= 20_000_000
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert config["source_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    table = np.load(folder / "embeddings.npy")
    assert table.dtype == np.float16 and table.shape == (config["tokens"], config["dims"]) == (config["tokens"], 256)
    assert np.isfinite(table).all()


def test_rows_are_unit_float32_of_the_stated_dimension(embedder):
    vectors = embedder.embed(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS), embedder.dim) == (len(TEXTS), 256)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 256)
    empty = embedder.embed(["", "   "])  # no token at all: a zero row, never NaN
    assert np.isfinite(empty).all() and not empty.any()


def test_identical_texts_give_identical_rows_and_runs_repeat(embedder):
    once = embedder.embed([DIFFUSION, PROTEIN, DIFFUSION])
    assert (embedder.n_embedded, embedder.n_cached) == (2, 0)  # distinct texts, no cache
    np.testing.assert_array_equal(once[0], once[2])
    again = StaticEmbedder().embed([PROTEIN, DIFFUSION])
    np.testing.assert_array_equal(again, once[[1, 0]])  # the same row whatever else is in the batch


def test_neighbourhoods_are_sensible(embedder):
    vectors = dict(zip(TEXTS, embedder.embed(TEXTS)))
    assert vectors["diffusion model"] @ vectors["denoising diffusion"] > \
        vectors["diffusion model"] @ vectors["protein folding"] + 0.2
    assert vectors[DIFFUSION] @ vectors[DENOISING] > vectors[DIFFUSION] @ vectors[PROTEIN] + 0.2
    assert vectors["protein folding"] @ vectors[PROTEIN] > vectors["protein folding"] @ vectors[DENOISING]
    # Case and accents fold as in the source model's tokenizer.
    np.testing.assert_allclose(*embedder.embed(["Naïve DIFFUSION", "naive diffusion"]), atol=1e-6)


def test_it_names_itself_for_the_caches(embedder):
    assert embedder.model_id.startswith("static:static-fitted-minilm-256#") and len(embedder.model_id.split("#")[1]) == 12
    assert embedder_id(embedder) == embedder.model_id
    assert StaticEmbedder(bundled_table_dir()).model_id == embedder.model_id


def test_a_missing_table_says_so(tmp_path):
    assert not static_embedder_available(tmp_path)
    with pytest.raises(StaticEmbedderUnavailable, match="no static embedding table"):
        StaticEmbedder(tmp_path)


def test_the_hybrid_takes_it_as_its_dense_channel(embedder):
    library = [Paper(id="q", title="Denoising diffusion models", abstract=DIFFUSION)]
    pool = [Paper(id="d", title="Score-based generative models", abstract=DENOISING),
            Paper(id="p", title="Protein structure prediction", abstract=PROTEIN)]
    scores = np.asarray(HybridModel(embedder=embedder).fit(library, pool).scores_)
    assert scores.shape == (2,) and np.isfinite(scores).all() and scores[0] > scores[1]


def test_it_runs_without_torch_or_sentence_transformers(embedder):
    code = (
        "import sys, json\n"
        "for name in ('torch', 'transformers', 'sentence_transformers', 'model2vec', 'safetensors'):\n"
        "    sys.modules[name] = None  # any import of them now fails\n"
        "from recommender.models.static_embeddings import StaticEmbedder\n"
        f"vectors = StaticEmbedder().embed({TEXTS!r})\n"
        "sys.stdout.write(json.dumps(vectors.tolist()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # Deterministic across processes: bit for bit the rows of this process.
    np.testing.assert_array_equal(np.asarray(json.loads(done.stdout), dtype=np.float32), embedder.embed(TEXTS))


def test_embedder_static_from_the_cli_and_through_an_index(tmp_path):
    """`--embedder static`: the opt-in dense channel without the extra, kept by an index."""
    import json
    import subprocess
    import sys

    from recommender.defaults import bundled_collection

    def litrank(*arguments):
        return subprocess.run([sys.executable, "-m", "recommender", *arguments], capture_output=True, text=True,
                              cwd=tmp_path, check=False, timeout=300)

    ranked = litrank("rank", "--embedder", "static", "-n", "5", "-f", "jsonl")
    assert ranked.returncode == 0, ranked.stderr
    assert "static:static-fitted-minilm-256" in ranked.stderr
    assert litrank("index", str(bundled_collection()), "--embedder", "static", "-o", "c.litrank").returncode == 0
    from_index = litrank("rank", "-c", "c.litrank", "-n", "5", "-f", "jsonl", "--embedder", "auto")  # the index's
    assert from_index.returncode == 0 and "static:static-fitted-minilm-256" in from_index.stderr
    assert [json.loads(line)["id"] for line in from_index.stdout.splitlines()] == \
        [json.loads(line)["id"] for line in ranked.stdout.splitlines()]


# -- the default install's dense channel ---------------------------------------------------------

def test_auto_is_the_static_table_without_the_extra(monkeypatch):
    """"auto" (the default everywhere): MiniLM with the extra, else the shipped table, else none."""
    from recommender.models import embeddings, static_embeddings

    monkeypatch.delenv("LITRANK_EMBEDDER", raising=False)  # the conftest turns embeddings off
    monkeypatch.setattr(embeddings, "default_embedder_installed", lambda: False)
    chosen = embeddings.resolve_embedder(None)
    assert isinstance(chosen, StaticEmbedder) and chosen.model_id.startswith("static:static-fitted-minilm-256#")
    assert isinstance(embeddings.resolve_embedder("auto"), StaticEmbedder)
    assert embeddings.resolve_embedder("none") is None and embeddings.resolve_embedder(False) is None
    monkeypatch.setattr(static_embeddings, "static_embedder_available", lambda path=None: False)
    assert embeddings.resolve_embedder("auto") is None  # neither the extra nor tokenizers: lexical only


def test_the_cli_and_the_api_rank_with_it_by_default_and_say_so(monkeypatch):
    from click.testing import CliRunner

    import recommender
    from recommender.cli import main
    from recommender.defaults import bundled_collection, bundled_library
    from recommender.models import embeddings

    monkeypatch.delenv("LITRANK_EMBEDDER", raising=False)
    monkeypatch.setattr(embeddings, "default_embedder_installed", lambda: False)
    result = CliRunner().invoke(main, ["rank", "-n", "0", "-f", "jsonl"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert "Using dense embeddings (the static table distilled from all-MiniLM-L6-v2" in result.stderr
    assert "static:static-fitted-minilm-256" in result.stderr  # "Ranked by hybrid: ... embeddings"
    cli_ids = [json.loads(line)["id"] for line in result.stdout.splitlines()]
    api_ids = [pick.paper.id for pick in recommender.rank(bundled_library(), bundled_collection(), top=0)]
    assert cli_ids == api_ids and len(cli_ids) > 20
    lexical = CliRunner().invoke(main, ["rank", "-n", "0", "-f", "jsonl", "--embedder", "none"])
    assert [json.loads(line)["id"] for line in lexical.stdout.splitlines()] != cli_ids  # the channel counts


def test_the_learned_model_takes_the_prior_without_embeddings_for_the_table(embedder):
    """The shipped prior with embedding features learned MiniLM's cosines, which run lower."""
    from recommender.models.scoring import LearnedModel

    library = [Paper(id="q", title="Denoising diffusion models", abstract=DIFFUSION)]
    pool = [Paper(id="d", title="Score-based generative models", abstract=DENOISING),
            Paper(id="p", title="Protein structure prediction", abstract=PROTEIN)]
    static = LearnedModel(embedder=embedder).fit(library, pool)
    assert "embedding_max" in static.feature_names_ and "embedding_max" not in static.prior_model_.feature_names_
    assert "static:static-fitted-minilm-256" in static.description_

    class OtherEmbedder:
        model_id = "test/other-model"

        def embed(self, texts):
            return embedder.embed(texts)

    other = LearnedModel(embedder=OtherEmbedder()).fit(library, pool)
    assert "embedding_max" in other.prior_model_.feature_names_


def test_the_index_embeds_the_collection_aside_while_it_counts_words(embedder):
    """A thread-safe embedder (the table) embeds the collection in a thread of its own; the
    vectors are those it gives when asked directly, in the papers' order."""
    import threading

    import connectors
    from recommender.defaults import bundled_collection
    from recommender.features.collection_index import CollectionIndexBuilder

    class Watched:
        thread_safe = True
        model_id = embedder.model_id

        def __init__(self):
            self.threads = []

        def embed(self, texts):
            self.threads.append(threading.current_thread())
            return embedder.embed(texts)

    papers = connectors.load(bundled_collection())
    watched = Watched()
    index = CollectionIndexBuilder(embedder=watched).build(papers)
    assert watched.threads and watched.threads[0] is not threading.main_thread()
    np.testing.assert_array_equal(index.embeddings, embedder.embed([paper.text for paper in papers]))
    watched.thread_safe = False  # any other embedder: here, in order
    CollectionIndexBuilder(embedder=watched).build(papers)
    assert watched.threads[-1] is threading.main_thread()


PLAIN_EDGES = ["foo\x0cbar baz", "naïve Café résumé", "数据 mining", "tab\tnew\nline\r", "em—dash and ‘quotes’",
               "ctrl\x01char", "\x7fdel", "", "UPPER lower MiXeD 3.5% (x_1)", "İstanbul", "zero\u200bwidth",
               "soft\u00adhyphen", "non\u00a0breaking", "“Quoted” — dash – ‘single’ … 3×3 αβγ ΣΩ ς", "x ≠ y",
               "ά accented Greek"]
# ASCII texts go word by word: punctuation runs, numbers, identifiers, a word over WordPiece's
# 100 characters ([UNK]), and a text longer than the 512 tokens kept (cut at the same token).
ASCII_EDGES = ["a--b...c!!(x_1)[y^2]{z}", "3.5e-4 vs. 1,000,000; p<0.05 & q>=1", "CamelCase GPT-4o x86_64 C++ C#",
               "'quoted' \"double\" `back` ~tilde~ @at #hash $dollar %pct", "word" * 30 + " short",
               " ".join(["transformers (attention), 12-layer BERT-base; fine-tuning!"] * 120), "   \t\n ", "."]


def test_plain_texts_take_the_lower_casing_tokenizer_and_get_the_same_ids(embedder, monkeypatch):
    """Plain texts (printable ASCII, typographic punctuation, Greek letters) skip BERT's normaliser
    (a third of the tokenizer's time) and get the very ids it gives; texts with anything else
    (accents, CJK, control and format characters, Unicode spaces, decomposing symbols) keep it.
    Checked on the bundled collection, on edge cases and, with the shared data, on 14,397
    conference abstracts (97% of them plain)."""
    import connectors
    from recommender import defaults
    from recommender.models import static_embeddings
    from recommender.models.static_embeddings import _PLAIN_TEXT, token_ids
    from tests.conftest import CONFERENCES

    # The ASCII texts go word by word whatever this machine's cores (checked here on them all).
    monkeypatch.setattr(static_embeddings, "usable_cores", lambda: 2)
    tokenizer, _ = embedder._load()
    plain = embedder._plain_tokenizer
    assert plain is not None and type(plain.normalizer).__name__ == "Lowercase"
    texts = [paper.text for paper in connectors.load(defaults.bundled_collection())] + PLAIN_EDGES + ASCII_EDGES
    if CONFERENCES.is_dir():
        import gzip

        for path in sorted(CONFERENCES.glob("*.jsonl.gz"))[:40]:
            with gzip.open(path, "rt", encoding="utf-8") as lines:
                texts.extend(f"{row.get('title') or ''}. {row.get('abstract') or ''}" for row in map(json.loads, lines))
    assert token_ids(tokenizer, texts, plain) == token_ids(tokenizer, texts)
    assert [bool(_PLAIN_TEXT.fullmatch(text)) for text in PLAIN_EDGES] == [
        False, False, False, True, True, False, False, True, True, False, False, False, False, True, False, False]
    for character in {character for character in _PLAIN_TEXT.pattern if ord(character) > 0x7e} | set(
            map(chr, [*range(0x391, 0x3a2), *range(0x3a3, 0x3aa), *range(0x3b1, 0x3ca)])):
        assert unicodedata.normalize("NFD", character) == character
        assert unicodedata.category(character) not in ("Mn", "Cc", "Cf", "Zs", "Lo"), character
    # The lower-casing tokenizer alone differs on what is not plain: the split is needed.
    assert token_ids(plain, ["naïve Café", "foo\x0cbar"]) != token_ids(tokenizer, ["naïve Café", "foo\x0cbar"])
    mixed = texts[:20] + PLAIN_EDGES  # plain and other texts interleaved: each row back in its place
    np.testing.assert_array_equal(embedder.embed(mixed), np.vstack([embedder.embed([text]) for text in mixed]))


def test_ascii_texts_are_tokenised_word_by_word_to_the_same_ids(embedder, monkeypatch):
    """ASCII texts are split into BERT's pre-tokens here and each distinct word tokenised once
    (a quarter of the tokenizer's processor time): the ids are the tokenizer's, truncation at
    512 tokens included; a cache handed in keeps the words for the next call; machines of many
    cores and tokenizers that do not split as BERT does keep the tokenizer's own way."""
    import connectors
    from recommender import defaults
    from recommender.models import static_embeddings
    from recommender.models.static_embeddings import ascii_token_ids, splits_like_bert, token_ids

    tokenizer, _ = embedder._load()
    plain = embedder._plain_tokenizer
    texts = [paper.text for paper in connectors.load(defaults.bundled_collection()) if paper.text.isascii()]
    texts += ASCII_EDGES
    assert splits_like_bert(plain) and plain.truncation["max_length"] == 512
    cache: dict = {}
    found = ascii_token_ids(plain, texts, cache)
    assert found == token_ids(tokenizer, texts)
    assert len(found[len(texts) - 3]) == 512 and found[-2:] == [[], [tokenizer.token_to_id(".")]]
    assert cache["transformers"] == tokenizer.encode("transformers", add_special_tokens=False).ids
    assert cache["word" * 30] == [tokenizer.token_to_id("[UNK]")]
    assert token_ids(tokenizer, texts, plain, cache) == found and len(cache) == len(set(cache))
    for cores, word_by_word in ((2, True), (static_embeddings.WORD_BY_WORD_MAX_CORES + 1, False)):
        monkeypatch.setattr(static_embeddings, "usable_cores", lambda: cores)
        fresh: dict = {}
        assert token_ids(tokenizer, texts, plain, fresh) == found and bool(fresh) is word_by_word
    # The same words again from a cache that holds them: the tokenizer is not asked.
    class Refusing:
        truncation = plain.truncation

        def encode(self, *args, **kwargs):
            raise AssertionError("a cached word was tokenised again")
    assert ascii_token_ids(Refusing(), texts[:5], cache) == found[:5]
    unsplit = embedder._plain_tokenizer.__class__.from_str(plain.to_str())
    from tokenizers import pre_tokenizers
    unsplit.pre_tokenizer = pre_tokenizers.Whitespace()
    assert not splits_like_bert(unsplit)


def test_the_table_stays_float16_and_each_batch_widens_only_its_rows(embedder):
    """The bundled table is held as stored (float16: half the bytes of a float32 copy); a
    batch's product with only the rows its texts use widened gives the vectors of the whole
    table widened, bit for bit (repeated tokens, texts without tokens, a row a text); checked
    on the bundled collection, edge cases and, with the shared data, 3,000 conference abstracts."""
    import connectors
    from recommender import defaults
    from recommender.models.static_embeddings import token_means, widened_product
    from tests.conftest import CONFERENCES

    tokenizer, table = embedder._load()
    assert table.dtype == np.float16 and table.flags.c_contiguous
    texts = [paper.text for paper in connectors.load(defaults.bundled_collection())] + PLAIN_EDGES + ASCII_EDGES
    texts += ["", "the the the the", "zzzqqqxxj", "Ünïcödé naïve café — 𝒪(n) ∀x ∈ ℝ"]
    if CONFERENCES.is_dir():
        import gzip

        with gzip.open(sorted(CONFERENCES.glob("*.jsonl.gz"))[0], "rt", encoding="utf-8") as lines:
            rows = [json.loads(line) for _, line in zip(range(3000), lines)]
        texts += [f"{row.get('title') or ''}. {row.get('abstract') or ''}" for row in rows]
    widened = table.astype(np.float32)
    for start in range(0, len(texts), 1024):
        means = token_means(tokenizer, texts[start:start + 1024], table.shape[0], embedder._plain_tokenizer)
        got = widened_product(means, table)
        assert got.dtype == np.float32 and got.shape == (means.shape[0], table.shape[1])
        assert np.array_equal(got, np.asarray(means @ widened, dtype=np.float32))
    # A table stored as float32 (one distilled by the script) is kept and used as it is.
    assert np.array_equal(widened_product(means, widened), got)
