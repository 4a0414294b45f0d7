"""A collection index built partition by partition equals the one-process index."""
from __future__ import annotations

import numpy as np
import pytest

import connectors
from recommender import defaults
from recommender.features.collection_index import CollectionIndexBuilder
from recommender.models.hybrid import HybridModel
from recommender.scale.affinity import AffinityScorer
from recommender.scale.cluster import LocalEngine
from recommender.scale.partitioned_index import build_partitioned
from recommender.scale.partitioned_scoring import CollectionPart
from tests.conftest import DATA, EXAMPLE_LIBRARY

COLLECTION = defaults.bundled_collection()


def split(papers, n):
    edges = np.linspace(0, len(papers), n + 1).round().astype(int)
    return [papers[start:stop] for start, stop in zip(edges[:-1], edges[1:])]


@pytest.fixture(scope="module")
def papers():
    # Two collections joined, so that partitions differ in topic and vocabulary.
    return connectors.load(COLLECTION) + connectors.load(DATA / "report-collection.jsonl")


def assert_same_rows(part: CollectionPart, index, start: int, stop: int):
    for name, expected in (("word", index.word_rows), ("char", index.char_rows), ("bm25", index.bm25_rows),
                           ("authors", index.author_rows)):
        got, want = getattr(part, name), expected[start:stop]
        assert got.shape == want.shape, name
        assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices), name
        assert np.array_equal(got.data, want.data), name


@pytest.mark.parametrize("n_partitions", [1, 3, 7])
def test_partitioned_vocabulary_idf_and_rows_equal_the_one_process_index(papers, n_partitions):
    index = CollectionIndexBuilder(lsa_components=0).build(papers)
    built = build_partitioned(LocalEngine(), split(papers, n_partitions))
    vocabulary = built.vocabulary
    assert vocabulary.word_terms == index.word_terms and vocabulary.char_terms == index.char_terms
    assert np.array_equal(vocabulary.word_idf, index.word_idf) and np.array_equal(vocabulary.char_idf, index.char_idf)
    assert np.array_equal(vocabulary.bm25_idf, index.bm25_idf)
    for name in ("word", "char"):  # what the library's IDF adds its own papers to
        assert np.array_equal(vocabulary.document_frequencies(name), index.document_frequencies(name))
    assert vocabulary.n_papers == index.n_papers
    assert vocabulary.bm25_average_length == index.bm25_average_length
    assert vocabulary.author_names == index.author_names
    assert built.paper_ids == [paper.id for paper in index.papers]
    assert [start for start, _ in built.bounds] == [part.offset for part in built.parts]
    for part, (start, stop) in zip(built.parts, built.bounds):
        assert_same_rows(part, index, start, stop)
        # Some rows only (a partition's feedback papers, or none of them): made from their counts.
        for rows in (np.zeros(0, dtype=np.int64), np.arange(0, len(part), 3)):
            word, char = part.lexical_rows(rows)
            for got, want in ((word, index.word_rows[start:stop][rows]), (char, index.char_rows[start:stop][rows])):
                assert got.shape == want.shape and (got != want).nnz == 0


def test_vocabulary_limits_apply_to_the_summed_document_frequencies(papers, monkeypatch):
    # The df limits (min_df 2, max_df 0.9) start at 5,000 / 10 papers; lower the first so a small
    # collection exercises both: a term seen once in each of two partitions must be kept.
    import recommender.features.index_features as index_features

    unlimited = CollectionIndexBuilder(lsa_components=0).build(papers)
    monkeypatch.setattr(index_features, "MIN_DF_FROM", 20)
    index = CollectionIndexBuilder(lsa_components=0).build(papers)
    built = build_partitioned(LocalEngine(), split(papers, 5))
    assert len(index.word_terms) < len(unlimited.word_terms) // 2  # the terms of one paper are gone
    assert len(index.char_terms) < len(unlimited.char_terms)
    assert built.vocabulary.word_terms == index.word_terms and built.vocabulary.char_terms == index.char_terms
    assert np.array_equal(built.vocabulary.word_idf, index.word_idf)


def test_scores_against_the_partitioned_index_equal_the_one_process_scores(papers):
    library = connectors.load(EXAMPLE_LIBRARY)
    index = CollectionIndexBuilder(lsa_components=0).build(papers)
    built = build_partitioned(LocalEngine(), split(papers, 4))
    scorer = AffinityScorer(HybridModel())
    (expected,) = scorer.score(index, {"me": library}, LocalEngine())
    (got,) = scorer.score(built, {"me": library}, LocalEngine())
    assert got.paper_ids(built) == expected.paper_ids(index)
    np.testing.assert_allclose(got.scores, expected.scores, rtol=0, atol=1e-12)


def test_workers_read_their_own_files_when_given_paths(papers, tmp_path):
    paths = []
    for number, part in enumerate(split(papers, 3)):
        paths.append(tmp_path / f"part-{number}.jsonl")
        connectors.dump(part, paths[-1])
    from_files = build_partitioned(LocalEngine(), [str(path) for path in paths], read=connectors.load)
    from_papers = build_partitioned(LocalEngine(), split(papers, 3))
    assert from_files.paper_ids == from_papers.paper_ids
    assert from_files.vocabulary.word_terms == from_papers.vocabulary.word_terms
    for a, b in zip(from_files.parts, from_papers.parts):
        assert np.array_equal(a.word.data, b.word.data) and np.array_equal(a.char.indices, b.char.indices)


def test_a_partition_of_stop_words_only_is_no_error_but_an_empty_collection_is(papers):
    from recommender.paper import Paper

    stop = [Paper(id="s1", title="The of and", abstract="")]
    built = build_partitioned(LocalEngine(), [papers[:10], stop])
    assert built.n_papers == 11 and built.parts[1].word.nnz == 0
    with pytest.raises(ValueError, match="vocabulary"):
        build_partitioned(LocalEngine(), [stop])


def test_a_library_with_its_own_terms_scores_on_the_partitioned_index_as_rank_scores_it(papers):
    """The library's side is weighted over library ∪ collection (its papers counted in the IDF,
    its own terms kept as extra columns) on the partitioned index exactly as on the one-process
    one: affinity and `rank --workers` give plain `rank`'s scores and explanations."""
    import dataclasses

    from recommender.ranking import Ranker

    library = connectors.load(EXAMPLE_LIBRARY)[:12]
    # A paper the picks are explained by, holding words no collection paper has.
    library[1] = own = dataclasses.replace(library[1], abstract=library[1].abstract + " Zyxomorphic quasiglobs.")
    other = connectors.load(DATA / "report-collection.jsonl")[:4]
    index = CollectionIndexBuilder(lsa_components=0).build(papers)
    built = build_partitioned(LocalEngine(), split(papers, 3))
    texts = [paper.text for paper in library]
    names = index.representations(library).word_vectorizer.get_feature_names_out()
    assert {"zyxomorphic", "quasiglobs", "zyxomorphic quasiglobs"} <= set(names[len(index.word_terms):])
    for name in ("word", "char"):
        got, want = built.vocabulary.library_rows(name, texts), index.library_rows(name, texts)
        assert got.shape == want.shape and got.shape[1] > len(index.word_terms if name == "word" else index.char_terms)
        assert np.array_equal(got.indices, want.indices) and np.array_equal(got.data, want.data), name

    for profile in (library, other):
        ranking = Ranker(HybridModel(), diversity=0).rank(profile, papers, judgements={})
        expected = {paper.id: float(score) for paper, score in zip(ranking.candidates, ranking.scores)}
        (scores,) = AffinityScorer(HybridModel()).score(built, {"me": profile}, LocalEngine())
        got = dict(zip(scores.paper_ids(built), scores.scores))
        assert got.keys() == expected.keys()
        assert max(abs(got[paper] - expected[paper]) for paper in expected) < 1e-9
    both = {r.profile_id: dict(zip(r.paper_ids(built), r.scores))
            for r in AffinityScorer(HybridModel()).score(built, {"me": library, "other": other}, LocalEngine())}
    alone = {r.profile_id: dict(zip(r.paper_ids(built), r.scores))
             for name, profile in (("me", library), ("other", other))
             for r in AffinityScorer(HybridModel()).score(built, {name: profile}, LocalEngine())}
    for name in alone:  # scored together, one profile's own terms are not another's
        assert both[name] == pytest.approx(alone[name], rel=0, abs=1e-9)

    local = Ranker(HybridModel()).rank(library, papers, top=10, explain_terms=5)
    cut = Ranker(HybridModel(), engine=LocalEngine()).rank(library, papers, top=10, explain_terms=5)
    # Similarities are float32 products (summed in another order on the engine): equal to 1e-6.
    picks = [(pick.paper.id, round(pick.score, 9), [(reason.paper.id, reason.terms) for reason in pick.because])
             for pick in local.recommendations]
    assert [(pick.paper.id, round(pick.score, 9), [(reason.paper.id, reason.terms) for reason in pick.because])
            for pick in cut.recommendations] == picks
    for mine, theirs in zip(local.recommendations, cut.recommendations):
        assert [r.similarity for r in theirs.because] == pytest.approx([r.similarity for r in mine.because], abs=1e-6)
    assert any(reason.paper.id == own.id for pick in local.recommendations for reason in pick.because)
