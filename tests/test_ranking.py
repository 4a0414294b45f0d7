import numpy as np
import pytest

import connectors
import recommender
from recommender import Paper, Ranker
from recommender.features import TfidfLibrarySimilarity, aggregate_similarities
from recommender.scoring import WeightedSimilarityScorer
from tests.conftest import EXAMPLE_LIBRARY, SEEDS, require

LIBRARY = [
    Paper("ddpm", title="Denoising diffusion probabilistic models",
          abstract="Diffusion models generate images by reversing a gradual noising process with a learned denoiser."),
    Paper("fm", title="Flow matching for generative modeling",
          abstract="Flow matching trains continuous normalizing flows by regressing vector fields of probability paths."),
    Paper("bert", title="Pretraining bidirectional transformers",
          abstract="Masked language modeling pretrains deep bidirectional transformers for language understanding."),
]
COLLECTION = [
    Paper("c-diff", title="Faster diffusion samplers",
          abstract="We reduce the steps needed to reverse the noising process of diffusion models for images."),
    Paper("c-flow", title="Rectified flow matching", abstract="Straight probability paths make flow matching vector fields easy to integrate."),
    Paper("c-bio", title="Protein folding kinetics", abstract="We measure folding rates of small proteins in vitro."),
    Paper("c-dup", title="Denoising Diffusion Probabilistic Models", abstract="Same paper as in the library."),
]


def test_aggregation_shapes_and_values():
    similarity = np.array([[0.1, 0.9, 0.5], [0.0, 0.0, 0.3]])
    features = aggregate_similarities(similarity, np.array([0.4, 0.1]), top_k=2)
    assert features.shape == (2, 3)
    np.testing.assert_allclose(features, [[0.9, 0.7, 0.4], [0.3, 0.15, 0.1]])
    assert aggregate_similarities(np.zeros((2, 0)), np.zeros(2), 3).shape == (2, 3)


def test_feature_builder_follows_estimator_conventions():
    builder = TfidfLibrarySimilarity(top_k=2)
    assert builder.get_params()["top_k"] == 2
    X = builder.fit(LIBRARY, corpus=COLLECTION).transform(COLLECTION)
    assert X.shape == (4, 3)
    assert list(builder.get_feature_names_out()) == ["tfidf_max", "tfidf_topk_mean", "tfidf_centroid"]
    assert X[0, 0] > X[2, 0] and X[1, 0] > X[2, 0]
    assert builder.similarities(COLLECTION[:1]).shape == (1, 3)
    assert "flow matching" in builder.shared_terms(COLLECTION[1], LIBRARY[1])
    with pytest.raises(ValueError, match="library is empty"):
        TfidfLibrarySimilarity().fit([])


def test_scorer_is_a_weighted_sum():
    scorer = WeightedSimilarityScorer(weights=(1.0, 0.0, 2.0)).fit(np.ones((2, 3)))
    np.testing.assert_allclose(scorer.predict([[0.5, 9, 0.25], [0, 0, 0]]), [1.0, 0.0])
    with pytest.raises(ValueError, match="3 features but 2 weights"):
        WeightedSimilarityScorer(weights=(1, 1)).fit(np.ones((1, 3)))


def test_rank_orders_explains_and_skips_library_papers():
    ranking = Ranker().rank(LIBRARY, COLLECTION, explain_terms=3)
    assert [p.id for p in ranking.already_in_library] == ["c-dup"]
    assert ranking.n_candidates == 3
    ids = [pick.paper.id for pick in ranking.recommendations]
    assert ids[-1] == "c-bio" and set(ids[:2]) == {"c-diff", "c-flow"}
    assert [pick.rank for pick in ranking.recommendations] == [1, 2, 3]
    flow = next(pick for pick in ranking.recommendations if pick.paper.id == "c-flow")
    assert flow.because[0].paper.id == "fm" and flow.because[0].terms
    bio = ranking.recommendations[-1]
    assert bio.score < ranking.recommendations[1].score


def test_rank_is_deterministic_and_top_limits():
    first = recommender.rank(LIBRARY, COLLECTION, top=2)
    second = recommender.rank(list(LIBRARY), list(COLLECTION), top=2)
    assert len(first) == 2
    assert [(r.paper.id, r.score) for r in first] == [(r.paper.id, r.score) for r in second]


def test_rank_accepts_paths():
    picks = recommender.rank(EXAMPLE_LIBRARY, require(SEEDS), top=5)
    assert len(picks) == 5 and all(p.paper.venue == "ICML" for p in picks)
    assert picks[0].score >= picks[-1].score
    # The example library is about diffusion: the top pick is close to one of its papers.
    assert picks[0].because and picks[0].because[0].similarity > 0.05


def test_empty_library_is_an_error():
    with pytest.raises(ValueError, match="library has no papers"):
        recommender.rank([Paper("x")], COLLECTION)


def test_collection_all_known_gives_no_picks():
    ranking = Ranker().rank(LIBRARY, LIBRARY)
    assert ranking.recommendations == [] and len(ranking.already_in_library) == 3
