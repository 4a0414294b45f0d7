"""litrank's estimators keep scikit-learn's contract without scikit-learn being imported to rank."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import sparse
from sklearn.base import clone
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer
from sklearn.model_selection import ParameterGrid
from sklearn.preprocessing import normalize

import connectors
from recommender.estimator import Estimator
from recommender.features.collection_index import CollectionIndexBuilder
from recommender.features.index_features import STOP_WORDS, fold_accents, title_analyzer
from recommender.features.sparse_products import normalize_rows
from recommender.models.hybrid import HybridModel
from recommender.models.lightgbm_ranker import LightGBMRanker
from recommender.report.paper_map import PaperMap
from recommender.text import ENGLISH_STOP_WORDS as LITRANK_ENGLISH_STOP_WORDS
from tests.conftest import DATA, EXAMPLE_LIBRARY

ESTIMATORS = [HybridModel, CollectionIndexBuilder, LightGBMRanker, PaperMap]


@pytest.mark.parametrize("estimator_class", ESTIMATORS)
def test_parameters_are_those_of_init_and_clone_keeps_them(estimator_class):
    estimator = estimator_class()
    params = estimator.get_params()
    assert params and all(getattr(estimator, name) is value for name, value in params.items())
    name = sorted(params)[0]
    changed = estimator.set_params(**{name: "changed"})
    assert changed is estimator and estimator.get_params()[name] == "changed"
    copy = clone(estimator)
    assert type(copy) is estimator_class and copy is not estimator
    assert copy.get_params()[name] == "changed"
    assert f"{name}='changed'" in repr(estimator)


def test_a_wrong_parameter_name_is_refused_with_the_valid_ones():
    with pytest.raises(ValueError, match=r"invalid parameter 'feedback_dcos'.*'feedback_docs'"):
        HybridModel().set_params(feedback_dcos=3)


def test_repr_shows_only_parameters_that_differ_from_their_defaults():
    assert repr(HybridModel()) == "HybridModel()"
    assert repr(HybridModel(feedback_docs=4, aggregation=3)) == "HybridModel(aggregation=3, feedback_docs=4)"


def test_nested_estimators_are_reached_by_double_underscore_names():
    class Outer(Estimator):
        def __init__(self, inner=None, weight=1.0):
            self.inner = inner
            self.weight = weight

    outer = Outer(inner=HybridModel(feedback_docs=2))
    assert outer.get_params()["inner__feedback_docs"] == 2
    outer.set_params(inner__feedback_docs=5, weight=0.5)
    assert outer.inner.feedback_docs == 5 and outer.weight == 0.5
    assert clone(outer).inner.feedback_docs == 5
    grid = [HybridModel().set_params(**params) for params in ParameterGrid({"char_weight": [0.0, 0.5]})]
    assert [model.char_weight for model in grid] == [0.0, 0.5]


def test_varargs_constructors_are_refused():
    class Loose(Estimator):
        def __init__(self, *weights):
            self.weights = weights

    with pytest.raises(RuntimeError, match="no \\*args"):
        Loose(1, 2).get_params()


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_rows_are_normalised_as_scikit_learn_normalises_them(dtype):
    papers = connectors.load(EXAMPLE_LIBRARY)
    counts = CountVectorizer().fit_transform([paper.text for paper in papers]).astype(dtype)
    counts = sparse.vstack([counts, sparse.csr_matrix((1, counts.shape[1]), dtype=dtype)], format="csr")  # a zero row
    for matrix in (counts, counts.tocoo(), counts.toarray()):
        ours, theirs = normalize_rows(matrix), normalize(matrix)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        if sparse.issparse(theirs):
            assert sparse.isspmatrix_csr(ours) and (ours != theirs).nnz == 0
        else:
            np.testing.assert_array_equal(ours, theirs)
    assert counts.data.max() > 1  # the input itself is left as it was


def test_the_english_stop_words_are_scikit_learns():
    assert LITRANK_ENGLISH_STOP_WORDS == ENGLISH_STOP_WORDS
    assert set(STOP_WORDS) >= ENGLISH_STOP_WORDS


def test_title_terms_are_those_of_the_title_vectoriser():
    papers = connectors.load(DATA / "report-collection.jsonl") + connectors.load(DATA / "hard-cases.bib")
    analyze = CountVectorizer(stop_words=STOP_WORDS, preprocessor=fold_accents).build_analyzer()
    titles = [paper.title for paper in papers] + ["Ünïcödé naïve café — 𝒪(n) bound", "a I x_y 3D", ""]
    assert [title_analyzer()(title) for title in titles] == [analyze(title) for title in titles]


def test_ranking_against_an_index_imports_no_scikit_learn(tmp_path):
    """Importing scikit-learn costs a quarter of a whole `rank -c index` run; it is not needed there."""
    index = tmp_path / "collection.litrank"
    collection = DATA / "report-collection.jsonl"
    subprocess.run([sys.executable, "-m", "recommender", "-q", "index", str(collection), "-o", str(index),
                    "--embedder", "none"], check=True, capture_output=True)
    script = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from recommender.cli import main\n"
        f"result = CliRunner().invoke(main, ['-q', 'rank', '-l', {str(EXAMPLE_LIBRARY)!r}, '-c', {str(index)!r},"
        " '-n', '5', '--format', 'jsonl', '--embedder', 'none'])\n"
        "assert result.exit_code == 0, result.output\n"
        "print(len(result.output.splitlines()), sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn'))\n")
    done = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    assert done.stdout.split() == ["5", "[]"]
