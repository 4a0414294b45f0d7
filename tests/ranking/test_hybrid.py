"""recommender.models.hybrid: the default ranker (lexical + dense similarity with pseudo-relevance feedback)."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

import connectors
from recommender import Paper, Ranker, defaults
from recommender.models.aggregation import (
    depth_for,
    library_spread,
    profile_share,
    shrink_to_library,
    standardize_columns,
    top_mean,
    topic_depth,
)
from recommender.models.hybrid import HybridModel
from recommender.models.pseudo_feedback import feedback_expanded_similarity, feedback_top
from tests.conftest import EXAMPLE_LIBRARY, SEEDS, require

QUERY = Paper(id="q", title="Masked diffusion language models",
              abstract="We train discrete masked diffusion language models that generate text by iterative "
                       "unmasking and match autoregressive perplexity.")
CANDIDATES = [
    Paper(id="c-mdlm", title="Simple masked discrete diffusion for text",
          abstract="A masked diffusion language model trained with a simplified objective generates text "
                   "by unmasking tokens in parallel."),
    Paper(id="c-ar", title="Scaling autoregressive transformers",
          abstract="Autoregressive language models improve with scale; we study perplexity as parameters grow."),
    Paper(id="c-img", title="Diffusion models for image synthesis",
          abstract="Denoising diffusion models generate images from Gaussian noise with a U-Net."),
    Paper(id="c-bio", title="Protein structure prediction",
          abstract="We predict three-dimensional protein structure from amino-acid sequences."),
    Paper(id="c-rl", title="Offline reinforcement learning",
          abstract="Conservative value estimates let agents learn policies from fixed datasets."),
]


def test_standardize_columns_and_depths():
    block = standardize_columns(np.array([[1.0, 5.0], [3.0, 5.0]]))
    np.testing.assert_allclose(block, [[-1.0, 0.0], [1.0, 0.0]])  # a constant column stays finite
    assert profile_share(1, 3.0) == 0.0
    assert profile_share(10, 3.0) == pytest.approx(2.7)
    assert profile_share(500, 3.0) == pytest.approx(3.0 * 0.998 * np.sqrt(10 / 500))


def test_the_topics_depth_is_the_lower_quartile_of_topic_sizes_at_least_two():
    two_topics = np.full((8, 8), -0.5)
    two_topics[:4, :4] = two_topics[4:, 4:] = 3.0  # two topics of four papers each
    np.fill_diagonal(two_topics, 100.0)  # a paper is not its own topic-mate
    assert topic_depth(two_topics) == 4
    main_line = np.zeros((16, 16))
    main_line[:10, :10] = 2.5  # a main line of ten papers and six side interests of one paper each:
    assert topic_depth(main_line) == 2  # the lower quartile of topic sizes is 1 (their mean is 6.6)
    main_line[10:13, 10:13] = main_line[13:, 13:] = 2.5  # the side interests, two topics of three
    assert topic_depth(main_line) == 3
    assert topic_depth(np.zeros((7, 7))) == 2  # seven topics of one paper: the floor of two
    assert topic_depth(np.full((2, 2), 9.0)) == 2 and topic_depth(np.zeros((1, 1))) == 1
    assert topic_depth(np.full((3, 3), 2.0)) == 2  # at the threshold is not above it
    assert [depth_for("auto", n) for n in (1, 2, 3, 500)] == [1, 2, 2, 2]  # the default
    assert [depth_for(4, n) for n in (1, 3, 500)] == [1, 3, 4]
    assert [depth_for("log2", n) for n in (1, 7, 500)] == [1, 3, 9]
    assert depth_for("topics", 1) == 1 and depth_for("topics", 8, two_topics) == 4
    with pytest.raises(ValueError, match="z-scores"):
        depth_for("topics", 5)


def test_no_feedback_papers_means_no_feedback():
    # feedback_docs=0 once failed (the feedback was chosen from scores already let go).
    collection = connectors.load(defaults.bundled_collection())
    example = connectors.load(EXAMPLE_LIBRARY)
    none = HybridModel(feedback_docs=0).fit(example, collection).scores_
    np.testing.assert_allclose(none, HybridModel(feedback_weight=0.0).fit(example, collection).scores_, atol=1e-12)
    assert np.abs(none - HybridModel().fit(example, collection).scores_).max() > 1e-3


def test_library_spread_moves_each_column_half_way_to_the_pooled_spread():
    spread = np.array([1.0, 4.0, 0.0])
    pooled = np.sqrt((1.0 + 16.0 + 0.0) / 3)
    np.testing.assert_allclose(library_spread(spread), np.sqrt(spread * pooled))
    np.testing.assert_allclose(library_spread(np.array([2.0, 2.0, 2.0])), [2.0, 2.0, 2.0])  # equal spreads stay
    block = np.array([[0.1, 0.5, 0.3], [0.3, 0.5, 0.9], [0.2, 0.5, 0.6]])
    scaled = standardize_columns(block, pooled=True)
    assert np.all(np.isfinite(scaled)) and np.all(scaled[:, 1] == 0.0)  # a constant column stays 0
    np.testing.assert_allclose(scaled.mean(axis=0), 0.0, atol=1e-12)
    own = standardize_columns(block)
    # The narrow column (0) is stretched less than by its own spread, the broad one (2) more.
    assert np.ptp(scaled[:, 0]) < np.ptp(own[:, 0]) and np.ptp(scaled[:, 2]) > np.ptp(own[:, 2])


def test_shrinking_moves_each_columns_statistics_towards_the_librarys_by_the_prior():
    mean, spread = np.array([0.1, 0.3]), np.array([0.02, 0.06])
    library_square = np.mean(spread ** 2)
    for unchanged in (shrink_to_library(mean, spread, 16, 0.0), shrink_to_library(mean[:0], spread[:0], 16, 300.0)):
        np.testing.assert_array_equal(unchanged[0], mean[: len(unchanged[0])])
        np.testing.assert_array_equal(unchanged[1], spread[: len(unchanged[1])])
    # As many candidates as the prior: half way, the spreads in their squares.
    half_mean, half_spread = shrink_to_library(mean, spread, 300, 300.0)
    np.testing.assert_allclose(half_mean, [0.15, 0.25])
    np.testing.assert_allclose(half_spread, np.sqrt(0.5 * spread ** 2 + 0.5 * library_square))
    # A conference's collection keeps each column's own; a short list takes the library's.
    np.testing.assert_allclose(shrink_to_library(mean, spread, 3_000_000, 300.0), (mean, spread), rtol=1e-3)
    np.testing.assert_allclose(shrink_to_library(mean, spread, 16, 1e12), ([0.2, 0.2], [np.sqrt(library_square)] * 2))
    # Per-column counts (the partitioned path's) weigh each column by its own.
    per_column_mean, _ = shrink_to_library(mean, spread, np.array([300, 900]), 300.0)
    np.testing.assert_allclose(per_column_mean, [0.15, 0.75 * 0.3 + 0.25 * 0.2])
    # Standardising with an overwhelming prior is one affine map for the whole block: a column
    # that is closer to every candidate keeps that lead, where its own statistics would erase it.
    block = np.array([[0.1, 0.5], [0.3, 0.6], [0.2, 0.7]])
    expected = (block - block.mean()) / np.sqrt(np.mean(block.std(axis=0) ** 2))
    np.testing.assert_allclose(standardize_columns(block, prior=1e15), expected, atol=1e-9)
    assert standardize_columns(block)[:, 1].max() < standardize_columns(block)[:, 0].max() + 1e-12


def test_the_column_prior_matters_on_short_collections_and_hardly_on_a_conference():
    collection = connectors.load(defaults.bundled_collection())
    one = [QUERY]
    np.testing.assert_allclose(HybridModel().fit(one, collection).scores_,
                               HybridModel(column_prior=0).fit(one, collection).scores_, atol=1e-12)
    example = connectors.load(EXAMPLE_LIBRARY)

    def rank_agreement(candidates) -> float:
        shrunk = HybridModel().fit(example, candidates).scores_
        own = HybridModel(column_prior=0).fit(example, candidates).scores_
        return float(np.corrcoef(np.argsort(np.argsort(shrunk)), np.argsort(np.argsort(own)))[0, 1])

    # 3,000 candidates: the library's statistics count for 300 of them, the orders nearly agree.
    assert rank_agreement(collection) > 0.99
    # 16 candidates: the library's count for nearly all, and the order moves.
    assert rank_agreement(collection[:16]) < rank_agreement(collection)


def test_column_scale_changes_only_libraries_of_several_papers():
    collection = connectors.load(defaults.bundled_collection())
    one = [QUERY]
    np.testing.assert_array_equal(HybridModel().fit(one, collection).scores_,
                                  HybridModel(column_scale="own").fit(one, collection).scores_)
    example = connectors.load(EXAMPLE_LIBRARY)
    library, own = HybridModel().fit(example, collection).scores_, HybridModel(column_scale="own").fit(
        example, collection).scores_
    assert np.abs(library - own).max() > 1e-3
    with pytest.raises(ValueError, match="column_scale"):
        HybridModel(column_scale="pooled").fit(example, collection)


def test_a_library_of_two_topics_averages_more_papers_than_one_of_scattered_papers():
    collection = connectors.load(defaults.bundled_collection())
    example = connectors.load(EXAMPLE_LIBRARY)  # 54 papers on diffusion models and diffusion language models
    model = HybridModel().fit(example, collection)  # the default depth: "topics"
    assert model.aggregation_depth_ > 4
    assert HybridModel(aggregation="auto").fit(example, collection).aggregation_depth_ == 2
    fixed = HybridModel(aggregation=model.aggregation_depth_).fit(example, collection)
    np.testing.assert_array_equal(model.scores_, fixed.scores_)  # "topics" is that depth, nothing else
    scattered = [Paper(id=f"s{i}", title=title, abstract=abstract) for i, (title, abstract) in enumerate([
        ("Protein folding with attention", "We predict protein structure from sequence with attention networks."),
        ("Offline reinforcement learning", "Conservative value estimates let agents learn from fixed datasets."),
        ("Graph neural networks for molecules", "Message passing networks predict molecular properties."),
        ("Speech recognition at scale", "Weakly supervised training on audio transcribes many languages."),
    ])]
    assert HybridModel(aggregation="topics").fit(scattered, collection).aggregation_depth_ == 2
    with pytest.raises(ValueError, match="aggregation must be 'topics', 'auto', 'log2' or a number"):
        HybridModel(aggregation="topic").fit(scattered, collection)


def test_feedback_moves_each_library_vector_towards_its_best_feedback_papers():
    vectors = np.array([[1.0, 0.0, 0.0],   # the library paper
                        [0.6, 0.8, 0.0],   # candidate close to it, leaning to axis 1
                        [0.0, 1.0, 0.0],   # candidate on axis 1 only
                        [0.0, 0.0, 1.0]])  # unrelated candidate
    library, candidates = np.array([0]), np.array([1, 2, 3])
    plain = vectors[candidates] @ vectors[library].T
    first = plain.copy()
    unchanged = feedback_expanded_similarity(vectors, library, candidates, candidates, first, 1, 0.0)
    np.testing.assert_allclose(unchanged, plain)
    expanded = feedback_expanded_similarity(vectors, library, candidates, candidates, first, 1, 1.0)
    # The query moved towards candidate 1 (its best match): candidate 2 (axis 1) gains, 3 stays at 0.
    assert expanded[1, 0] > plain[1, 0] + 0.3 and expanded[2, 0] == pytest.approx(0.0)
    excluded = first.copy()
    excluded[0] = -np.inf  # candidate 1 may not serve as feedback: candidate 2 is the next best
    towards_two = feedback_expanded_similarity(vectors, library, candidates, candidates, excluded, 1, 1.0)
    assert towards_two[1, 0] > expanded[1, 0]
    more_than_available = feedback_expanded_similarity(vectors, library, candidates, candidates, first, 10, 1.0)
    assert np.isfinite(more_than_available).all()



def test_feedback_on_real_vectors_is_the_plain_rocchio_step():
    """Every library paper's expanded vector, computed one at a time the plain way."""
    from scipy import sparse
    from sklearn.preprocessing import normalize

    from recommender.features.collection_index import CollectionIndexBuilder
    from tests.conftest import DATA

    papers = connectors.load(DATA / "report-collection.jsonl")
    library_papers = connectors.load(EXAMPLE_LIBRARY)
    rep = CollectionIndexBuilder(lsa_components=0).build(papers).representations(library_papers)
    vectors = sparse.hstack([rep.vectors["word"][:], rep.vectors["char"][:]], format="csr")
    vectors = normalize(vectors.astype(np.float64))  # float64, as the model joins them
    n_library = len(library_papers)
    library, candidates = np.arange(n_library), np.arange(n_library, vectors.shape[0])
    feedback = np.concatenate([candidates, library])  # candidates first, as the model orders them
    scores = (vectors[feedback] @ vectors[library].T).toarray()
    scores[len(candidates) + library, library] = -np.inf
    k, weight = 3, 0.7
    got = feedback_expanded_similarity(vectors, library, candidates, feedback, scores, k, weight)
    dense = vectors.toarray()
    for column in range(n_library):
        best = feedback[np.argsort(-scores[:, column], kind="stable")[:k]]
        centroid = dense[best].mean(axis=0)
        expanded = dense[column] + weight * centroid / np.linalg.norm(centroid)
        expected = dense[candidates] @ (expanded / np.linalg.norm(expanded))
        np.testing.assert_allclose(got[:, column], expected, rtol=1e-12, atol=1e-12)
    # The feedback chosen beforehand (as the model chooses it once for both channels) and the
    # scores let go: the same numbers, bit for bit.
    top = feedback_top(scores, k)
    assert top.shape == (k, n_library)
    np.testing.assert_array_equal(
        feedback_expanded_similarity(vectors, library, candidates, feedback, None, k, weight, top=top), got)
    assert feedback_top(scores, 0) is None


def test_query_by_example_ranks_the_related_paper_first_and_explains():
    model = HybridModel().fit([QUERY], CANDIDATES)
    order = [CANDIDATES[i].id for i in np.argsort(-model.scores_)]
    assert order[0] == "c-mdlm" and set(order[-2:]) == {"c-bio", "c-rl"}
    assert set(model.components_) == {"lexical", "authors"}  # one paper: no profile, nobody lists authors
    np.testing.assert_allclose(model.scores_, model.components_["lexical"] + model.components_["authors"])
    assert model.description_ == "hybrid: words and character n-grams with pseudo-relevance feedback"
    drivers = model.drivers(0)
    assert drivers and drivers[0].feature == "shared words and phrases" and drivers[0].contribution > 0


def test_shared_authors_raise_a_candidate_and_say_so():
    author = "Ada Lovelace"
    library = [Paper(id="l", title=QUERY.title, abstract=QUERY.abstract, authors=[author, "Alan Turing"])]
    candidates = [Paper(**{**CANDIDATES[i].__dict__, "authors": [author] if CANDIDATES[i].id == "c-rl" else ["X Y"]})
                  for i in range(len(CANDIDATES))]
    with_authors = HybridModel().fit(library, candidates)
    assert candidates[int(np.argmax(with_authors.scores_))].id == "c-rl"
    assert with_authors.drivers(4)[0].feature == "authors of your papers"
    without = HybridModel(author_weight=0).fit(library, candidates)
    assert candidates[int(np.argmax(without.scores_))].id == "c-mdlm"


def test_a_disliked_candidate_serves_no_feedback():
    model = HybridModel(feedback_docs=1)
    liked_feedback = model.fit([QUERY], CANDIDATES).scores_.copy()
    disliked_first = model.fit([QUERY], CANDIDATES, judgements={0: -1}).scores_
    assert not np.allclose(liked_feedback, disliked_first)


def test_a_candidate_matching_one_topic_of_a_library_ranks_above_one_near_none():
    # Two topics, one paper each: a pick on one of them is what a researcher's library asks for.
    library = [QUERY, Paper(id="bio", title="Protein folding with learned potentials",
                            abstract="We fold proteins from amino-acid sequences with learned energy potentials.")]
    scores = HybridModel().fit(library, CANDIDATES).scores_
    ids = [CANDIDATES[i].id for i in np.argsort(-scores)]
    assert ids.index("c-bio") < ids.index("c-rl") and ids[0] in ("c-mdlm", "c-bio")


def test_disliked_papers_push_down_what_resembles_them_only_when_asked():
    near_twin = Paper(id="twin", title="Offline reinforcement learning from fixed datasets",
                      abstract="Conservative value estimates let agents learn policies from logged, fixed datasets.")
    candidates = CANDIDATES + [near_twin]
    rl = [c.id for c in candidates].index("c-rl")
    plain = HybridModel().fit([QUERY], candidates, judgements={rl: -1})
    pushed = HybridModel(disliked_weight=1.0).fit([QUERY], candidates, judgements={rl: -1})
    assert "disliked" not in plain.components_ and pushed.components_["disliked"].shape == (len(candidates),)
    twin = len(candidates) - 1
    assert pushed.scores_[twin] < plain.scores_[twin]  # the disliked paper's twin lost most
    drop = plain.scores_ - pushed.scores_
    assert drop[twin] == max(np.delete(drop, rl))
    assert all(driver.feature != "papers you disliked" for driver in pushed.drivers(twin, n=5))


def test_estimator_conventions_and_determinism():
    model = HybridModel(feedback_docs=4, dense_weight=0.7)
    copy = clone(model)
    assert copy.get_params()["feedback_docs"] == 4 and copy.get_params()["dense_weight"] == 0.7
    library = connectors.load(EXAMPLE_LIBRARY)
    collection = connectors.load(require(SEEDS))
    first = HybridModel().fit(library, collection)
    second = HybridModel().fit(library, collection)
    assert first.scores_.tobytes() == second.scores_.tobytes()
    assert set(first.components_) == {"lexical", "authors"}  # the whole-library profile is off by default
    profiled = HybridModel(profile_weight=1.0).fit(library, collection)
    assert set(profiled.components_) == {"lexical", "profile", "authors"}
    assert first.scores_.shape == (len(collection),)


def test_ranker_uses_the_hybrid_model_by_default_with_one_or_many_papers():
    one = Ranker(diversity=0).rank([QUERY], CANDIDATES)
    assert one.model.startswith("hybrid: ") and one.recommendations[0].paper.id == "c-mdlm"
    library = connectors.load(EXAMPLE_LIBRARY)
    many = Ranker().rank(library, require(SEEDS), top=5, explain_terms=3)
    assert len(many.recommendations) == 5 and all(pick.because for pick in many.recommendations)
    assert all(pick.drivers for pick in many.recommendations)


def test_short_library_papers_weigh_the_dense_signal_more():
    title_only = Paper(id="t", title="Masked diffusion language models")  # 4 words
    weights = HybridModel().dense_weights([title_only, QUERY, Paper(id="e", title="")])
    np.testing.assert_allclose(weights, [1.0 * 10 / 4, 1.0, 1.0 * 10])
    np.testing.assert_allclose(HybridModel(short_text_words=0).dense_weights([title_only, QUERY]), [1.0, 1.0])
    np.testing.assert_allclose(HybridModel(dense_weight=0.5).dense_weights([title_only]), [0.5 * 10 / 4])


def test_each_channel_takes_the_library_papers_it_matches_best():
    """With an embedder (the bundled static table: no extra needed) the dense channel's part is
    the candidate's best dense score over the library, the lexical part the mean of its two best
    lexical scores, each over its own papers: so each part, and the score, is at least what
    it is when both are taken at the papers the summed channels choose (dense_depth=None)."""
    from recommender.models.static_embeddings import StaticEmbedder

    embedder = StaticEmbedder()
    library, collection = connectors.load(EXAMPLE_LIBRARY), connectors.load(defaults.bundled_collection())
    own = HybridModel(embedder=embedder).fit(library, collection)
    summed = HybridModel(embedder=embedder, dense_depth=None).fit(library, collection)
    for name in ("lexical", "dense"):
        assert np.all(own.components_[name] >= summed.components_[name] - 1e-9)
        assert np.any(own.components_[name] > summed.components_[name] + 1e-3)
    assert np.all(own.scores_ >= summed.scores_ - 1e-9)
    text = own.components_["lexical"] + own.components_["dense"]
    np.testing.assert_allclose(own.scores_, text + own.components_["authors"], atol=1e-9)
    # Its three best dense matches averaged instead: the dense part falls (at most the best).
    three = HybridModel(embedder=embedder, dense_depth=3).fit(library, collection)
    assert np.all(three.components_["dense"] <= own.components_["dense"] + 1e-9)
    np.testing.assert_allclose(three.components_["lexical"], own.components_["lexical"], atol=1e-12)
    # One library paper: one column, the same scores either way.
    one = library[:1]
    np.testing.assert_allclose(HybridModel(embedder=embedder).fit(one, collection).scores_,
                               HybridModel(embedder=embedder, dense_depth=None).fit(one, collection).scores_,
                               atol=1e-12)
    with pytest.raises(ValueError, match="dense_depth must be None or at least 1"):
        HybridModel(embedder=embedder, dense_depth=0).fit(library, collection)
    # Without an embedder the setting has nothing to act on.
    np.testing.assert_array_equal(HybridModel(embedder=None).fit(library, collection).scores_,
                                  HybridModel(embedder=None, dense_depth=None).fit(library, collection).scores_)


def test_title_only_queries_gain_from_the_dense_weight_on_expert_judgements():
    """CSFCube's dev fold with each query paper cut to its title (a Zotero item without an
    abstract): the raised dense weight ranks the pools better (abstracts keep their weight,
    above). NDCG%20 rose on every facet of both folds; the background facet's 8 pools (782
    papers to embed) keep the test short."""
    import dataclasses

    pytest.importorskip("sentence_transformers", reason="dense embeddings need the extra: pip install 'litrank[embeddings]'")
    from connectors.files import csfcube
    from recommender.evaluation.human_judgements import evaluate_delivered, summary
    from recommender.models.embeddings import SentenceEmbedder
    from tests.conftest import SHARED

    data = csfcube.load(require(SHARED / "data" / "csfcube"))
    dev = [pair for pair in data.query_facets("fold1_dev") if pair[1] == "background"]
    embedder = SentenceEmbedder()
    for query in {query for query, _ in dev}:
        data.papers[query] = dataclasses.replace(data.papers[query], abstract="")
    titles = {setting: summary({"m": evaluate_delivered(data, dev, lambda: HybridModel(embedder=embedder,
                                                                                      short_text_words=setting), 0)},
                               dev)["m"]["all"] for setting in (0, 10)}
    assert titles[10]["ndcg%20"] > titles[0]["ndcg%20"] + 0.005  # 0.670 against 0.665


def _first_pass_top(model, rep, feedback_rows, judgements, dense_weights):
    """The feedback the first pass chose when it was made whole (the rule before): each
    channel's block part widened, standardised over the candidates, the dense one weighted,
    added; disliked candidates and each library paper itself excluded."""
    from recommender.models.aggregation import block_part

    n_candidates, n_library = len(model.candidate_rows_), len(model.library_rows_)
    _, lexical_block = model._lexical(rep)

    def standardised(block, weights=1.0):
        scores = block_part(block, feedback_rows, model.library_rows_).astype(np.float64)
        standardize_columns(scores, scores[:n_candidates], in_place=True, pooled=model._pooled,
                            prior=model.column_prior)
        return np.multiply(scores, weights, out=scores)

    if dense_weights is None:
        first = block_part(lexical_block, feedback_rows, model.library_rows_).copy()
    else:
        first = standardised(lexical_block) + standardised(rep.blocks["embedding"], dense_weights)
    first[[index for index, value in judgements.items() if value < 0]] = -np.inf
    if model.library_feedback:
        first[n_candidates + np.arange(n_library), np.arange(n_library)] = -np.inf
    return feedback_top(first, model.feedback_docs)


@pytest.mark.parametrize("embedded", [True, False])
@pytest.mark.parametrize("judgements", [{}, {0: -1, 5: -1, 17: 1}])
def test_the_first_pass_chooses_the_feedback_a_chunk_at_a_time_as_when_made_whole(embedded, judgements):
    """The first pass is never made whole (at 30,000 candidates it was two float64 blocks of
    122 MB): a chunk of rows at a time, it chooses exactly the feedback papers the whole block
    chose, with and without embeddings and judgements, and leaves the representation's blocks
    untouched."""
    from recommender.features.representations import RepresentationBuilder
    from recommender.models.aggregation import TOP_K_CHUNK
    from recommender.models.static_embeddings import StaticEmbedder

    library, collection = connectors.load(EXAMPLE_LIBRARY), connectors.load(defaults.bundled_collection())
    # Collection papers twice over: more rows than one chunk of the top-k pass.
    collection = list(collection) * (TOP_K_CHUNK // len(collection) + 1)
    rep = RepresentationBuilder(embedder=StaticEmbedder() if embedded else None).build(
        list(library) + collection, len(library))
    blocks = {name: np.array(block, copy=True) for name, block in rep.blocks.items()}
    library_rows, candidate_rows = np.arange(len(library)), np.arange(len(library), len(library) + len(collection))
    feedback_rows = np.concatenate([candidate_rows, library_rows])
    assert len(feedback_rows) > TOP_K_CHUNK
    model = HybridModel().fit_representations(rep, library_rows, candidate_rows, list(library), judgements)
    dense_weights = model.dense_weights(list(library)) if embedded else None
    _, lexical_block = model._lexical(rep)
    top = model._feedback_top(rep, lexical_block, feedback_rows, judgements, dense_weights)
    np.testing.assert_array_equal(top, _first_pass_top(model, rep, feedback_rows, judgements, dense_weights))
    assert not (judgements and np.isin(top, [0, 5]).any())  # disliked candidates never serve
    for name, block in blocks.items():
        np.testing.assert_array_equal(rep.blocks[name], block)


def test_a_float32_block_is_standardised_a_chunk_of_rows_at_a_time_to_the_last_bit():
    """column_scale and standardized_chunks read a float32 block a chunk of rows at a time (its
    float64 copy at 30,000 candidates is 122 MB) and give what standardising the copy gives,
    bit for bit, over all rows or some, with and without pooling and a prior; chunked_top_mean
    equals top_mean."""
    from recommender.models.aggregation import ROW_CHUNK, chunked_top_mean, column_scale, standardized_chunks

    rng = np.random.default_rng(0)
    block = rng.random((ROW_CHUNK * 3 + 7, 6), dtype=np.float32)
    rows = rng.permutation(len(block))[: ROW_CHUNK * 2 + 3]
    for columns in (np.arange(6), np.array([4, 0, 2]), np.array([3])):
        for pooled, prior in ((False, 0.0), (True, 300.0)):
            whole = block[np.ix_(rows, columns)].astype(np.float64)
            expected = standardize_columns(whole, pooled=pooled, prior=prior) * 2.5
            mean, spread = column_scale(block, rows, columns, pooled=pooled, prior=prior)
            chunks = list(standardized_chunks(block, mean, spread, rows, columns, scales=(2.5,)))
            assert [start for start, _ in chunks] == list(range(0, len(rows), ROW_CHUNK))
            np.testing.assert_array_equal(np.vstack([chunk for _, chunk in chunks]), expected)
            for k in (1, 2, len(columns)):
                means, best = chunked_top_mean(iter(chunks), expected.shape, k)
                expected_means, expected_best = top_mean(expected, k)
                np.testing.assert_array_equal(means, expected_means)
                np.testing.assert_array_equal(best, expected_best)


