"""Composite, researcher-shaped libraries from CSFCube (recommender.evaluation.composite) and
`litrank evaluate --benchmark csfcube-composite`: on the tiny fixture tests/data/csfcube-mini
(synthetic papers, the dataset's layout; `make.py` beside it writes it), and once on the real
dataset when ../shared/data/csfcube is there."""
from __future__ import annotations

import dataclasses
import json
import zlib

import numpy as np
import pytest
from click.testing import CliRunner

from connectors.files import csfcube
from recommender.cli import main
from recommender.evaluation import composite
from recommender.evaluation.holdout import model_scorer
from recommender.models.hybrid import HybridModel
from tests.conftest import DATA, SHARED, require

MINI = DATA / "csfcube-mini"
CSFCUBE = SHARED / "data" / "csfcube"
FOLDS = ("fold1_dev", "fold1_test", "fold2_dev", "fold2_test")


@pytest.fixture(scope="module")
def mini():
    return csfcube.load(MINI)


@pytest.fixture(scope="module")
def libraries(mini):
    return {fold: composite.build_libraries(mini, fold, count=8) for fold in FOLDS}


def test_libraries_are_the_same_for_a_seed_and_differ_for_another(mini, libraries):
    assert composite.build_libraries(mini, "fold1_dev", count=8) == libraries["fold1_dev"]
    other = composite.build_libraries(mini, "fold1_dev", count=8, seed=1)
    assert [lib.library for lib in other] != [lib.library for lib in libraries["fold1_dev"]]


def test_sizes_spread_over_the_range_and_topics_come_from_several_queries(libraries):
    assert composite.target_sizes(30) == sorted(composite.target_sizes(30))
    assert composite.target_sizes(30)[0] == 5 and composite.target_sizes(30)[-1] == 20
    for fold, built in libraries.items():
        assert len(built) == 8
        sizes = [lib.size for lib in built]
        assert all(5 <= size <= 20 for size in sizes) and max(sizes) - min(sizes) >= 10, (fold, sizes)
        for lib in built:
            queries = [query for query, _ in lib.query_facets]
            assert len(queries) >= 2 and len(set(queries)) == len(queries)
            assert len({facet for _, facet in lib.query_facets}) >= 2  # facets taken in turn
            assert len(set(lib.library)) == lib.size and set(queries) <= set(lib.library)


def test_a_library_holds_one_fold_only(mini, libraries):
    for fold, built in libraries.items():
        allowed = set(mini.query_facets(fold))
        assert all(set(lib.query_facets) <= allowed and lib.fold == fold for lib in built)
    dev_topics = {pair for lib in libraries["fold1_dev"] for pair in lib.query_facets}
    test_topics = {pair for lib in libraries["fold1_test"] for pair in lib.query_facets}
    assert dev_topics.isdisjoint(test_topics)


def test_own_papers_are_grade_3_candidates_and_some_are_left_to_find(mini, libraries):
    for lib in libraries["fold1_dev"] + libraries["fold1_test"]:
        queries = {query for query, _ in lib.query_facets}
        own = [paper for paper in lib.library if paper not in queries]
        assert own, lib.name
        for paper in own:
            assert any(mini.pool(q, f).get(paper) == 3 for q, f in lib.query_facets)
        for query, facet in lib.query_facets:  # each topic keeps grade-3 candidates in the collection
            assert any(lib.grades.get(paper) == 3 for paper, grade in mini.pool(query, facet).items() if grade == 3)
    assert [composite.own_paper_count(n) for n in range(6)] == [0, 0, 1, 2, 2, 3]


def test_the_collection_is_the_pools_without_the_library_judged_by_the_best_grade(mini, libraries):
    best_from_another_query = 0
    for lib in libraries["fold1_dev"] + libraries["fold1_test"]:
        pools = [mini.pool(q, f) for q, f in lib.query_facets]
        expected = set().union(*pools) - set(lib.library)
        assert set(lib.grades) == expected and not set(lib.library) & set(lib.collection)
        for paper, grade in lib.grades.items():
            assert grade == max(pool.get(paper, 0) for pool in pools)
            judged = [pool[paper] for pool in pools if paper in pool]
            best_from_another_query += 0 in judged and grade > 0
    assert best_from_another_query > 0  # the fixture's pools overlap: the rule is exercised


def test_leads_are_paired_library_by_library():
    # Two libraries; "hybrid" leads TF-IDF by 0.1 and 0.3: lead 0.2, standard error 0.141 / √2 = 0.1.
    results = {"tfidf": {"a": {"ndcg%20": 0.5}, "b": {"ndcg%20": 0.2}},
               "hybrid": {"a": {"ndcg%20": 0.6}, "b": {"ndcg%20": 0.5}},
               "embedding": {"a": {"ndcg%20": 0.7}, "b": {"ndcg%20": 0.4}}}
    leads = composite.leads(results, ["a", "b"])
    assert leads == {"hybrid": {"tfidf": {"lead": 0.2, "se": 0.1}, "embedding": {"lead": 0.0, "se": 0.1}}}
    assert composite.leads(results, ["a"])["hybrid"]["tfidf"] == {"lead": 0.1, "se": 0.0}
    assert composite.leads(results, []) == {}
    assert composite.leads({"tfidf": results["tfidf"]}, ["a", "b"]) == {}  # no default row


def test_dense_aggregation_by_hand():
    library = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    candidates = np.array([[2.0, 0.0], [0.0, 3.0]])
    root = 1 / np.sqrt(2)
    assert composite.top_mean_cosine(library, candidates, 1) == pytest.approx([1.0, 1.0])
    assert composite.top_mean_cosine(library, candidates, 2) == pytest.approx([(1 + root) / 2] * 2)
    assert composite.top_mean_cosine(library, candidates, 3) == pytest.approx([(1 + root) / 3] * 2)
    assert composite.top_mean_cosine(library[:1], candidates, 3) == pytest.approx([1.0, 0.0])


class _WordEmbedder:
    """A bag of hashed words: enough for the dense methods' plumbing."""

    model_id = "test-words"

    def embed(self, texts):
        out = np.zeros((len(texts), 64))
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, sum(map(ord, word)) % 64] += 1.0
        return out


def test_every_method_runs_on_the_same_libraries(mini, libraries):
    chosen = libraries["fold1_dev"][:3]
    methods = ["random", "tfidf", "hybrid", "embedding", "embedding-top3", "hybrid+embeddings"]
    results = composite.evaluate_composite(mini, chosen, methods, embedder=_WordEmbedder())
    assert set(results) == set(methods)
    for per_library in results.values():
        assert set(per_library) == {lib.name for lib in chosen}
        assert all(0 <= v <= 1 for metrics in per_library.values() for v in metrics.values())
    table = composite.summary(results, chosen)
    assert table["all"]["libraries"] == 3 and sum(table[b]["libraries"] for b in ("5-8", "9-14", "15-20")) == 3
    assert table["all"]["methods"]["tfidf"]["map"] > table["all"]["methods"]["random"]["map"]
    with pytest.raises(ValueError, match="need --embedder"):
        composite.evaluate_composite(mini, chosen, ["embedding"])


class GradedPools:
    """The data interface the builders read (``pool``, ``query_facets``), over made-up pools: query
    ``Q<i>`` has ``relevant[i]`` grade-2/3 candidates of its own, 10 grade-0/1 ones, and one
    grade-2 candidate it shares with the next query (a paper two topics both want)."""

    def __init__(self, relevant):
        self.relevant = relevant

    def query_facets(self, fold):
        return [(f"Q{i}", ("background", "method", "result")[i % 3]) for i in range(len(self.relevant))]

    def pool(self, query, facet):
        i = int(query[1:])
        grades = {f"Q{i}-r{j}": 2 + j % 2 for j in range(self.relevant[i])}
        grades.update({f"Q{i}-o{j}": j % 2 for j in range(10)})
        grades[f"shared{i}"] = 2
        if i:
            grades[f"shared{i - 1}"] = 3
        return grades


def test_publication_lists_are_balanced_or_a_main_line_with_side_interests():
    data = GradedPools([14, 13, 7, 6, 5, 3, 2, 12, 8, 16])
    built = composite.build_publication_libraries(data, "fold1_dev", count=8)
    assert built == composite.build_publication_libraries(data, "fold1_dev", count=8)  # seeded
    assert built != composite.build_publication_libraries(data, "fold1_dev", count=8, seed=1)
    targets = [3, 4, 5, 6, 3, 4, 5, 6]
    # Balanced lists reach their number of topics; a main-line list passes over the topics drawn
    # before its main topic (too small to be one), so it may end with fewer.
    assert all(len(lib.query_facets) == target if number % 2 == 0 else 3 <= len(lib.query_facets) <= target
               for number, (lib, target) in enumerate(zip(built, targets)))
    for number, lib in enumerate(built):
        members = set(lib.library)
        assert lib.name == f"fold1_dev/publications#{number}"
        assert len(members) == lib.size and not members & set(lib.grades)
        owns = []
        for position, (query, facet) in enumerate(lib.query_facets):
            relevant = {paper for paper, grade in data.pool(query, facet).items() if grade >= 2}
            own = relevant & members
            owns.append(len(own))
            assert query in members
            if number % 2 == 0:  # balanced: half of every topic's relevant papers, from topics of 6 or more
                assert len(relevant) >= 6 and len(own) >= (len(relevant) + 1) // 2
            elif position == 0:  # the main line: three quarters, from a topic of 12 or more
                assert len(relevant) >= 12 and len(own) >= (3 * len(relevant) + 3) // 4
            else:  # a side interest: its query paper and one relevant paper (two when one is shared)
                assert len(relevant) >= 3 and 1 <= len(own) <= 3
        if number % 2:
            assert owns[0] > max(owns[1:])
        pooled = {}
        for query, facet in lib.query_facets:
            for paper, grade in data.pool(query, facet).items():
                pooled[paper] = max(pooled.get(paper, 0), grade)
        assert lib.grades == {paper: grade for paper, grade in pooled.items() if paper not in members}
        assert sum(grade >= 2 for grade in lib.grades.values()) > 0  # relevant papers left to find
    # Too few topics to choose from: a list that cannot reach 3 topics is left out.
    assert composite.build_publication_libraries(GradedPools([14, 2, 2, 2]), "fold1_dev", count=4) == []


def test_a_main_line_list_is_scored_on_each_side_of_it():
    data = GradedPools([14, 13, 7, 6, 5, 3, 2, 12, 8, 16])
    built = composite.build_publication_libraries(data, "fold1_dev", count=8)
    main_lines = [lib for lib in built if lib.shape == "main line"]
    assert len(main_lines) == 4
    results = {"main first": {}, "sides first": {}}
    expected_relevant = {"main topic": [], "side topics": []}
    for lib in main_lines:
        main, side = composite.topic_sides(data, lib)
        (query, facet), *others = lib.query_facets
        assert main == {paper: grade for paper, grade in data.pool(query, facet).items() if paper not in lib.library}
        assert side == composite.best_grades(data, others, lib.library)
        # Together they are the list's own judgements: each paper's best grade on either side.
        assert {paper: max(main.get(paper, 0), side.get(paper, 0)) for paper in {*main, *side}} == lib.grades
        expected_relevant["main topic"].append(sum(grade >= 2 for grade in main.values()))
        expected_relevant["side topics"].append(sum(grade >= 2 for grade in side.values()))
        # Every main-pool paper first, best main grade first: the main topic's ideal ranking.
        main_first = sorted(lib.grades, key=lambda paper: (paper not in main, -main.get(paper, 0), paper))
        sides_first = sorted(lib.grades, key=lambda paper: (-side.get(paper, 0), paper not in side, paper))
        cut = int(0.2 * len(lib.grades))
        assert cut > 0
        metrics = composite.side_metrics(main_first, main, side)
        assert set(metrics) == set(composite.SIDE_METRICS)
        assert metrics["ndcg%20 main topic"] == pytest.approx(1.0)
        assert metrics["cut from main pool"] == min(len(main), cut) / cut > 0.5
        assert metrics["ndcg%20 side topics"] < 0.5  # only the papers the sides share with the main topic
        other = composite.side_metrics(sides_first, main, side)
        assert other["ndcg%20 side topics"] == pytest.approx(1.0) and other["ndcg%20 main topic"] < 0.5
        assert other["cut from main pool"] == sum(paper in main for paper in sides_first[:cut]) / cut < 0.5
        results["main first"][lib.name], results["sides first"][lib.name] = metrics, other
    table = composite.main_line_sides(data, results, built)
    assert table["libraries"] == 4
    assert table["relevant"] == {name: round(float(np.mean(counts)), 1) for name, counts in expected_relevant.items()}
    # Three quarters of the main topic are in the library: most of what is left is the sides'.
    assert table["relevant"]["main topic"] < table["relevant"]["side topics"]
    assert table["methods"]["main first"]["ndcg%20 main topic"] == pytest.approx(1.0)
    assert table["methods"]["sides first"]["cut from main pool"] == pytest.approx(
        round(float(np.mean([results["sides first"][lib.name]["cut from main pool"] for lib in main_lines])), 4))
    balanced_only = [lib for lib in built if lib.shape == "balanced"]
    assert composite.main_line_sides(data, {}, balanced_only) == {
        "libraries": 0, "relevant": {"main topic": 0.0, "side topics": 0.0}, "methods": {}}


def test_the_real_dataset_gives_researcher_shaped_libraries():
    data = csfcube.load(require(CSFCUBE))
    for fold in ("fold1_dev", "fold1_test"):
        built = composite.build_libraries(data, fold)
        shape = composite.describe(built)
        assert shape["libraries"] == 30 and shape["size_min"] == 5 and shape["size_max"] == 20
        assert all(len(lib.query_facets) >= 2 and set(lib.query_facets) <= set(data.query_facets(fold))
                   for lib in built)
        assert all(not set(lib.library) & set(lib.grades) for lib in built)
        assert all(composite.bucket_name(lib.size) for lib in built)
    # TF-IDF on a few small dev libraries: well above a shuffle (a quick sanity check, not a result).
    small = composite.build_libraries(data, "fold1_dev")[:4]
    table = composite.summary(composite.evaluate_composite(data, small, ["random", "tfidf"]), small)["all"]["methods"]
    assert table["tfidf"]["ndcg%20"] > table["random"]["ndcg%20"] + 0.2


def test_the_default_beats_tfidf_on_the_tuning_folds_composite_libraries():
    # The lexical default (no embeddings) against the best TF-IDF cosine over the library, all 30
    # fold1_dev libraries (docs/models-and-quality.md: 0.639 / 0.387 against 0.632 / 0.370).
    data = csfcube.load(require(CSFCUBE))
    built = composite.build_libraries(data, "fold1_dev")
    table = composite.summary(composite.evaluate_composite(data, built, ["tfidf", "hybrid"]), built)["all"]["methods"]
    assert table["hybrid"]["ndcg%20"] > table["tfidf"]["ndcg%20"] and table["hybrid"]["map"] > table["tfidf"]["map"]


def test_on_publication_lists_the_shared_scale_helps_and_the_topics_depth_helps_balanced_ones():
    # fold1_dev publication lists (docs/models-and-quality.md), lexical default: the library
    # scale against each paper's own (the rule before) on main-line lists and over all lists;
    # the default's "topics" depth against a fixed two (the rule before) on balanced lists; the
    # default against TF-IDF on balanced lists.
    data = csfcube.load(require(CSFCUBE))
    built = composite.build_publication_libraries(data, "fold1_dev")
    shape = composite.describe(built)
    assert shape["libraries"] == 20 and 3 <= shape["topics_mean"] <= 6 and shape["size_mean"] > 20
    settings = {"own scale": {"column_scale": "own"}, "depth two": {"aggregation": "auto"}}
    results = composite.evaluate_composite(
        data, built, ["tfidf", "hybrid", *settings],
        extra_scorers={name: model_scorer(lambda kw=kw: HybridModel(**kw)) for name, kw in settings.items()})
    table = composite.publication_summary(results, built)
    assert table["balanced"]["libraries"] == table["main line"]["libraries"] == 10
    for shape_name in ("main line", "all"):
        methods = table[shape_name]["methods"]
        assert methods["hybrid"]["ndcg%20"] > methods["own scale"]["ndcg%20"]
    assert table["all"]["methods"]["hybrid"]["map"] > table["all"]["methods"]["own scale"]["map"]
    balanced = table["balanced"]["methods"]
    assert balanced["hybrid"]["ndcg%20"] > balanced["depth two"]["ndcg%20"] > balanced["tfidf"]["ndcg%20"]
    assert balanced["hybrid"]["map"] > balanced["depth two"]["map"] > balanced["tfidf"]["map"]
    # Where the default trails TF-IDF on main-line lists: it ranks the main topic's papers higher
    # (the papers left to find there, and that pool's others) and the side interests' lower,
    # where most of the relevant papers left are (4.5 against 31 a list).
    sides = composite.main_line_sides(data, results, built)
    assert sides["libraries"] == 10 and sides["relevant"] == {"main topic": 4.5, "side topics": 31.0}
    default, tfidf = sides["methods"]["hybrid"], sides["methods"]["tfidf"]
    assert default["ndcg%20 main topic"] > tfidf["ndcg%20 main topic"] + 0.03
    assert default["ndcg%20 side topics"] < tfidf["ndcg%20 side topics"] - 0.03
    assert default["cut from main pool"] > tfidf["cut from main pool"]


def test_the_cli_prints_the_sides_of_the_real_main_line_lists():
    # The first two publication lists of each fold: a balanced one and a main line.
    result = CliRunner().invoke(main, ["evaluate", "--benchmark", "csfcube-composite", "--data",
                                       str(require(CSFCUBE)), "--methods", "random,tfidf", "--limit", "2"])
    assert result.exit_code == 0, result.output
    for fold in ("fold1_dev", "fold1_test"):
        header = f"Main-line lists, {fold} (1), by topic"
        assert header in result.stdout
        rows = result.stdout.split(header)[1].split("\n\n")[1]
        random_row, tfidf_row = (next(line.split() for line in rows.splitlines() if line.split()[:1] == [name])
                                 for name in ("random", "tfidf"))
        # The best TF-IDF cosine finds the main topic's papers left to find far better than a shuffle.
        assert float(tfidf_row[1]) > float(random_row[1]) + 0.1


def test_with_half_the_library_titles_alone_the_default_still_beats_the_plain_dense_cosine():
    # fold1_dev composite libraries with all-MiniLM-L6-v2, the abstracts of half the library
    # papers left out (by id, as `benchmarks/tune_fusion.py --title-only 0.5` does; Zotero
    # items and BibTeX entries often have none). A title leans on its dense cosine; raising
    # that weight made the dense part (each candidate's best library paper) a title's by
    # weight alone: 0.653 against the plain dense max cosine's 0.661. Scaling a title's
    # lexical part down instead: 0.674 (docs/models-and-quality.md, "Titles without abstracts").
    pytest.importorskip("sentence_transformers", reason="dense embeddings need the extra: pip install 'litrank[embeddings]'")
    from recommender.evaluation.holdout import library_scorers
    from recommender.models.embeddings import SentenceEmbedder

    def titles_for_half(scorer):
        def cut(paper):
            if zlib.crc32(paper.id.encode("utf-8")) % 1000 >= 500:
                return paper
            return dataclasses.replace(paper, id=f"{paper.id}#title", abstract="")
        return lambda library, collection: scorer([cut(paper) for paper in library], collection)

    data = csfcube.load(require(CSFCUBE))
    built = composite.build_libraries(data, "fold1_dev")
    embedder = SentenceEmbedder()
    scorers = library_scorers(embedder)
    cut = {f"{name}, titles": titles_for_half(scorers[name]) for name in ("hybrid+embeddings", "embedding")}
    table = composite.summary(composite.evaluate_composite(data, built, list(cut), embedder=embedder, extra_scorers=cut),
                              built)["all"]["methods"]
    assert table["hybrid+embeddings, titles"]["ndcg%20"] > table["embedding, titles"]["ndcg%20"] + 0.005
    assert table["hybrid+embeddings, titles"]["map"] > table["embedding, titles"]["map"]


def test_the_cli_runs_the_composite_benchmark(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["evaluate", "--benchmark", "csfcube-composite", "--data", str(MINI),
                                  "--methods", "random,tfidf,hybrid", "--format", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["benchmark"] == "csfcube-composite" and payload["fold"] == "fold1_test"
    assert set(payload["folds"]) == {"fold1_dev", "fold1_test"}
    test = payload["folds"]["fold1_test"]
    assert test["shape"]["libraries"] == 30 and 5 <= test["shape"]["size_min"] <= test["shape"]["size_max"] <= 20
    assert set(test["composite"]) == {"all", "5-8", "9-14", "15-20"}
    assert set(test["composite"]["all"]["methods"]) == {"random", "tfidf", "hybrid"} == set(payload["methods"])
    assert set(test["single_query"]) == {"random", "tfidf", "hybrid"}
    assert all(name.startswith(("fold1_dev#", "fold1_test#", "fold1_dev/publications#", "fold1_test/publications#"))
               for name in payload["libraries"])
    lists = test["publications"]
    # The fixture's topics are too small for a main line: its lists are the balanced ones.
    assert lists["shape"]["libraries"] == lists["all"]["libraries"] == lists["balanced"]["libraries"] == 10
    assert lists["main line"]["libraries"] == 0 and set(lists["all"]["methods"]) == {"random", "tfidf", "hybrid"}
    assert lists["main line by topic"] == {"libraries": 0, "relevant": {"main topic": 0.0, "side topics": 0.0},
                                           "methods": {}}
    assert lists["all"]["methods"]["tfidf"]["ndcg%20"] > lists["all"]["methods"]["random"]["ndcg%20"]
    # The default's leads, library by library, from the same run's per-library figures.
    leads = test["leads"]
    assert set(leads) == {"single query", "composite", "lists", "balanced", "main line"}
    assert leads["main line"] == {}  # no main-line list in the fixture
    names = [name for name in payload["libraries"] if name.startswith("fold1_test#")]
    per_library = payload["per_library"]
    differences = [per_library["hybrid"][n]["ndcg%20"] - per_library["tfidf"][n]["ndcg%20"] for n in names]
    assert leads["composite"]["hybrid"]["tfidf"]["lead"] == pytest.approx(np.mean(differences), abs=6e-5)
    assert leads["composite"]["hybrid"]["tfidf"]["se"] == pytest.approx(
        np.std(differences, ddof=1) / np.sqrt(len(differences)), abs=6e-5)
    assert set(leads["single query"]["hybrid"]) == {"tfidf"}  # random is no baseline
    table = runner.invoke(main, ["evaluate", "--benchmark", "csfcube-composite", "--data", str(MINI), "--fold",
                                 "fold2_dev", "--methods", "tfidf", "--limit", "2"])
    assert table.exit_code == 0, table.output
    assert "composite libraries, fold1_dev" in table.stdout and "composite libraries, fold2_dev" in table.stdout
    assert "lists (2)" in table.stdout and "balanced (2)" in table.stdout and "main line (0)" in table.stdout
    assert "Main-line lists" not in table.stdout  # no main line: no table of its sides
    assert "How sure, fold2_dev" not in table.stdout  # no default row: no leads
    sure = runner.invoke(main, ["evaluate", "--benchmark", "csfcube-composite", "--data", str(MINI), "--methods",
                                "tfidf,hybrid", "--limit", "3"])
    assert sure.exit_code == 0, sure.output
    leads_table = sure.stdout.split("How sure, fold1_test")[1]
    row = next(line for line in leads_table.splitlines() if line.strip().startswith("hybrid - tfidf"))
    assert row.count("±") == 4  # single query, composite, lists, balanced (no main line in the fixture)
    missing = runner.invoke(main, ["evaluate", "--benchmark", "csfcube-composite", "--data", str(tmp_path)])
    assert missing.exit_code != 0 and "not a CSFCube directory" in missing.output
    unknown = runner.invoke(main, ["evaluate", "--benchmark", "csfcube-composite", "--data", str(MINI),
                                   "--methods", "embedding", "--embedder", "none"])
    assert unknown.exit_code != 0 and "need --embedder" in unknown.output
