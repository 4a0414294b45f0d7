import numpy as np
import pytest

import connectors
from recommender import Paper
from recommender.features.representations import RepresentationBuilder
from recommender.models.lightgbm_ranker import LightGBMRanker, self_supervised_training_set
from recommender.models.scoring import LearnedModel, load_prior
from recommender.models.signals import candidate_features, feature_names, recency_weights
from tests.conftest import EXAMPLE_LIBRARY, SEEDS, require


@pytest.fixture(scope="module")
def corpus():
    library = connectors.load(EXAMPLE_LIBRARY)
    collection = connectors.load(require(SEEDS))
    rep = RepresentationBuilder().build(library + collection, len(library))
    return library, collection, rep


def test_recency_weights_follow_zotero_arxiv_daily():
    papers = [Paper("old", date_added="2020-01-01"), Paper("new", date_added="2024-01-01"), Paper("mid", date_added="2022-01-01")]
    weights = recency_weights(papers)
    raw = 1 / (1 + np.log10(np.arange(3) + 1))
    np.testing.assert_allclose(weights, raw[[2, 0, 1]] / raw.sum())
    # Undated papers are older than dated ones; later in the file counts as more recent.
    undated = recency_weights([Paper("a"), Paper("b"), Paper("c", date_added="2021-05-05")])
    assert undated[2] > undated[1] > undated[0]


def test_representations_and_features_have_the_documented_shapes(corpus):
    library, collection, rep = corpus
    n_lib, n = len(library), len(library) + len(collection)
    assert set(rep.vectors) >= {"word", "char", "lsa", "title"}
    for name in ("word", "char", "lsa", "bm25", "authors"):
        assert rep.blocks[name].shape == (n, n_lib)
    X = candidate_features(rep, np.arange(n_lib, n), np.arange(n_lib), library)
    assert X.shape == (len(collection), len(feature_names())) and np.isfinite(X).all()
    names = feature_names()
    # ICML 2026 abstracts carry no real titles or authors: those features are zero.
    assert not X[:, [i for i, f in enumerate(names) if f.startswith(("title", "authors"))]].any()
    # A library paper scored against the rest of the library: its own column is left out.
    own = candidate_features(rep, np.array([0]), np.arange(1, n_lib), library[1:])
    assert own[0, names.index("word_max")] < 0.999
    assert feature_names(True)[: len(names)] == names and feature_names(True)[-1] == "embedding_recency"


def test_self_supervised_training_set_holds_library_papers_out(corpus):
    library, collection, rep = corpus
    n_lib = len(library)
    candidates = np.arange(n_lib, n_lib + len(collection))
    X, y, group = self_supervised_training_set(rep, library, np.arange(n_lib), candidates,
                                               judgements={int(candidates[0]): -1}, library_grades={3: 2},
                                               n_folds=4, holdout=0.25, max_negatives=30, seed=1)
    assert group == [14 + 1 + 30] * 4 and X.shape == (sum(group), len(feature_names()))
    assert y.max() == 2 and (y > 0).sum() == 4 * 14  # every held-out paper is a positive
    X2, y2, _ = self_supervised_training_set(rep, library, np.arange(n_lib), candidates, judgements={int(candidates[0]): -1},
                                             library_grades={3: 2}, n_folds=4, holdout=0.25, max_negatives=30, seed=1)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)


def test_lightgbm_ranker_learns_and_is_deterministic(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.random((400, 3))
    y = (X[:, 1] > 0.8).astype(int)
    first = LightGBMRanker(n_estimators=30).fit(X, y, [100] * 4, ["a", "b", "c"])
    second = LightGBMRanker(n_estimators=30).fit(X, y, [100] * 4, ["a", "b", "c"])
    np.testing.assert_array_equal(first.predict(X), second.predict(X))
    scores = first.predict(X)
    assert scores[y == 1].mean() > scores[y == 0].mean()
    assert first.contributions(X[:2]).shape == (2, 4)
    path = tmp_path / "model.txt"
    first.save(path)
    np.testing.assert_allclose(LightGBMRanker.load(path).predict(X), scores)


def test_shipped_prior_is_small_and_matches_the_features():
    prior = load_prior()
    assert prior is not None and prior.feature_names_ == feature_names(False)
    from importlib import resources

    path = __import__("pathlib").Path(str(resources.files("recommender.data").joinpath("prior-ranker.txt")))
    assert path.stat().st_size < 5 * 1024 * 1024


def test_learned_model_trains_on_the_library_and_beats_chance(corpus):
    library, collection, _ = corpus
    model = LearnedModel().fit(library[:-6], collection + library[-6:])
    scores = model.scores_
    hidden = scores[len(collection):]
    assert "trained on your 48 papers" in model.description_
    # The six hidden library papers rank far above the median conference paper.
    assert np.median(hidden) > np.percentile(scores[: len(collection)], 75)


def test_learned_model_with_real_embeddings(tmp_path):
    pytest.importorskip("sentence_transformers", reason="dense embeddings need pip install 'litrank[embeddings]'")
    from recommender.models.embeddings import SentenceEmbedder

    library = connectors.load(EXAMPLE_LIBRARY)
    collection = connectors.load(require(SEEDS))
    embedder = SentenceEmbedder(cache_dir=tmp_path)
    model = LearnedModel(embedder=embedder).fit(library, collection)
    assert model.X_.shape == (70, len(feature_names(True)))
    assert "embeddings" in model.description_ and model.prior_model_.feature_names_ == feature_names(True)
    assert embedder.n_embedded == len(library) + len(collection)
    again = LearnedModel(embedder=embedder).fit(library, collection)
    assert embedder.n_embedded == 0 and np.array_equal(again.scores_, model.scores_)


def test_every_feature_has_a_readable_label():
    from recommender.models.signals import describe_feature

    labels = [describe_feature(name) for name in feature_names(True)]
    assert len(set(labels)) == len(labels) and not any("_" in label for label in labels)
    assert describe_feature("word_top3") == "words: 3 closest papers"


def test_char_ngrams_in_a_second_process_equal_the_serial_result():
    from recommender.features.representations import PARALLEL_CHAR_MIN_PAPERS, char_ngrams, run_aside

    papers = connectors.load(EXAMPLE_LIBRARY) + connectors.load(require(SEEDS))
    texts = [p.text for p in papers] * (PARALLEL_CHAR_MIN_PAPERS // len(papers) + 1)
    parallel = run_aside(char_ngrams, texts, n_papers=len(texts))()
    serial = char_ngrams(texts)
    assert parallel.shape == serial.shape and (parallel != serial).nnz == 0
