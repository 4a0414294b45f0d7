"""The default ranker: lexical and dense similarity, fused, with pseudo-relevance feedback.

Tuned on expert relevance judgements (CSFCube's ``fold1_dev``; see ``litrank evaluate
--benchmark csfcube``), not on the author-continuity proxy. For every library paper:

1. **Lexical**: cosine over word uni+bigram TF-IDF joined with character 4-gram TF-IDF
   (weight ``char_weight``), fitted on library ∪ collection.
2. **Pseudo-relevance feedback** (Rocchio): the library paper's vector is moved towards the
   mean of its ``feedback_docs`` closest papers (weight ``feedback_weight`` / n for a library
   of n papers) and the lexical cosine computed again. A one-paragraph abstract names a
   method one way; its nearest neighbours in the collection name it the other ways too. Each
   further paper of a library is real evidence of what its owner means, which the pseudo-
   feedback only stands in for: hence the 1/n.
3. **Dense** (with an embedder): cosine of sentence embeddings.
4. **Fusion**: each signal is standardised over the candidates (per library paper, so every
   library paper is one query with its own scale) and added, dense weighted ``dense_weight``.

A candidate's score adds up to four parts:

* **text**: the mean of its ``k`` best per-library-paper scores (``k``: 1 for a one-paper
  library, 2 for more; see :func:`aggregation_depth`);
* **profile** (off by default, ``profile_weight``): BM25 of the candidate with the whole
  library as one query, weighted by :func:`profile_share`: what the library's papers have in
  common, which helps a library on one topic and costs one on several;
* **authors**: ``author_weight`` × log(1 + authors shared with library papers, summed over
  the library) / √n: several papers of a candidate's authors are close to a statement of
  interest, one shared name in a large library is a nudge (zero when no paper lists authors);
* **disliked** (``disliked_weight``, off by default): minus the best similarity to a paper
  the user disliked.

The text part was tuned on CSFCube ``fold1_dev``, its query papers and its composite libraries
of 5-20 papers on several topics (``benchmarks/tune_fusion.py``); the 1/n of the feedback and
``author_weight``, which an author-less benchmark cannot see, on the author-continuity benchmark.

Length: the model and the pseudo-relevance feedback only it uses (:func:`feedback_top`,
:func:`feedback_expanded_similarity`) are read together, in the order of the steps above.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from scipy import sparse

from recommender.estimator import Estimator
from recommender.features.collection_index import CollectionIndex, CollectionIndexBuilder
from recommender.features.representations import Representations
from recommender.features.sparse_products import SideBySide, dense_product, normalize_rows, take_rows
from recommender.models.index_fit import fit_on_index
from recommender.models.scoring import Driver, TermExplainer
from recommender.models.signals import library_query_bm25
from recommender.paper import Paper
from recommender.text import words

# Rows of a (rows x library papers) block handled at a time: 512 x 500 float64 is 2 MB, in cache.
ROW_CHUNK = 512


def standardize_columns(block: np.ndarray, reference: np.ndarray | None = None, in_place: bool = False) -> np.ndarray:
    """Each column minus its mean, divided by its standard deviation (if any); mean and
    deviation are those of ``reference`` (rows of the same columns) when given. ``in_place``:
    ``block`` (float64) becomes the result."""
    block = np.asarray(block, dtype=np.float64)
    reference = block if reference is None else np.asarray(reference, dtype=np.float64)
    mean, spread = column_mean_and_spread(reference)
    spread[spread == 0] = 1.0
    if in_place:
        for start in range(0, len(block), ROW_CHUNK):
            chunk = block[start:start + ROW_CHUNK]
            chunk -= mean
            chunk /= spread
        return block
    centred = block - mean
    centred /= spread  # in place: at 50,000 candidates a temporary block is 200 MB
    return centred


def column_mean_and_spread(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and (population) standard deviation of each column, a chunk of rows at a time
    (numpy's ``std`` makes a temporary as large as the block)."""
    mean = block.mean(axis=0)
    squares = np.zeros(block.shape[1])
    for start in range(0, len(block), ROW_CHUNK):
        deviation = block[start:start + ROW_CHUNK] - mean
        squares += np.einsum("ij,ij->j", deviation, deviation)
    return mean, np.sqrt(squares / max(len(block), 1))


def aggregation_depth(n_library: int) -> int:
    """How many of its best-matching library papers a candidate's score averages over: one
    for a query-by-example library, two otherwise.

    A researcher's library holds several topics of a few papers each; a pick should match
    one of them, and averaging over more papers mixes topics (on CSFCube's composite
    libraries two beat one and the earlier log2 depth: docs/models-and-quality.md).
    """
    return max(1, min(n_library, 2))


def depth_for(aggregation: str | int, n_library: int) -> int:
    """The aggregation depth an ``aggregation`` setting ("auto", "log2" or a number) gives a
    library of ``n_library`` papers."""
    if aggregation == "auto":
        return aggregation_depth(n_library)
    if aggregation == "log2":
        return max(1, min(n_library, int(np.ceil(np.log2(n_library + 1)))))
    return max(1, min(int(aggregation), n_library))


def profile_share(n_library: int, weight: float) -> float:
    """Weight of the whole-library profile: 0 for one paper, ``weight`` × (1 − 1/n) up to 10
    papers, then falling as √(10/n) (54 papers: 0.42 × weight; 500: 0.14 × weight)."""
    return weight * (1 - 1 / n_library) * min(1.0, float(np.sqrt(10 / n_library))) if n_library else 0.0


def _block_part(block: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``block[np.ix_(rows, columns)]``; when ``columns`` are all of them in order, only the
    rows are taken (a copy fewer)."""
    if len(columns) == block.shape[1] and np.array_equal(columns, np.arange(block.shape[1])):
        return block[rows]
    return block[np.ix_(rows, columns)]


def _top_mean(block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean of each row's ``k`` largest values, and the column indices of those values."""
    n_rows, n = block.shape
    if k >= n:
        return block.mean(axis=1), np.tile(np.arange(n), (n_rows, 1))
    means, columns = np.empty(n_rows), np.empty((n_rows, k), dtype=np.int64)
    for start in range(0, n_rows, ROW_CHUNK):  # the negated block and its argpartition, a chunk at a time
        chunk = block[start:start + ROW_CHUNK]
        best = np.argpartition(-chunk, k - 1, axis=1)[:, :k]
        columns[start:start + len(chunk)] = best
        means[start:start + len(chunk)] = np.take_along_axis(chunk, best, axis=1).mean(axis=1)
    return means, columns


def column_top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Row positions of each column's ``k`` largest values (in no order), shape (k, n_columns).

    A chunk of rows at a time, transposed so that each column's values are contiguous, then
    the chunks' candidates merged.
    """
    rows, values = [], []
    for start in range(0, len(scores), ROW_CHUNK * 8):
        chunk = np.ascontiguousarray(scores[start:start + ROW_CHUNK * 8].T)
        best = np.argpartition(-chunk, min(k, chunk.shape[1]) - 1, axis=1)[:, :k]
        rows.append(best + start)
        values.append(np.take_along_axis(chunk, best, axis=1))
    rows, values = np.hstack(rows), np.hstack(values)
    best = np.argpartition(-values, k - 1, axis=1)[:, :k]
    return np.take_along_axis(rows, best, axis=1).T


def feedback_top(feedback_scores: np.ndarray, feedback_docs: int) -> np.ndarray | None:
    """Positions (in the feedback rows) of each library paper's ``feedback_docs`` best-scoring
    feedback papers, shape (k, n_library); k is lowered to the fewest any paper may use, and
    None when that is none."""
    if feedback_scores.shape[1] == 0:
        return None
    k = int(min(feedback_docs, np.isfinite(feedback_scores).sum(axis=0).min()))
    return column_top_k(feedback_scores, k) if k > 0 else None


def feedback_expanded_similarity(vectors, library_rows: np.ndarray, candidate_rows: np.ndarray,
                                 feedback_rows: np.ndarray, feedback_scores: np.ndarray | None, feedback_docs: int,
                                 feedback_weight: float, top: np.ndarray | None = None) -> np.ndarray:
    """Rocchio feedback, every library paper at once: each library vector moves towards the
    mean of its ``feedback_docs`` best-scoring feedback papers, then candidates are scored again.

    Parameters
    ----------
    vectors : matrix of shape (N, d), L2-normalised rows (sparse, dense or
        :class:`~recommender.features.sparse_products.SideBySide`)
    library_rows, candidate_rows : ndarray of int
    feedback_rows : ndarray of int, shape (n_feedback,)
        The papers that may serve as feedback (candidates, other library papers).
    feedback_scores : ndarray of shape (n_feedback, n_library)
        The first-pass scores that choose them; ``-inf`` where one may not serve.
    feedback_docs : int
    feedback_weight : float
    top : ndarray of int, shape (k, n_library), optional
        :func:`feedback_top` of the scores when already made (``feedback_scores`` may then be
        None: a caller that keeps no scores lets go of them before the product).

    Returns
    -------
    ndarray of shape (n_candidates, n_library)
        Cosine of each candidate to each expanded library vector.
    """
    library = take_rows(vectors, library_rows)
    n_library = len(library_rows)
    if top is None and feedback_weight > 0:
        top = feedback_top(feedback_scores, feedback_docs)
    if top is None or feedback_weight <= 0:
        return dense_product(vectors, library, row_indices=candidate_rows)
    k = top.shape[0]
    # Only the chosen rows are taken out (all the feedback rows would be a copy of the collection).
    chosen, position = np.unique(np.asarray(feedback_rows)[top.T.ravel()], return_inverse=True)
    selection = sparse.csr_matrix((np.full(top.size, 1.0 / k), (np.repeat(np.arange(n_library), k), position)),
                                  shape=(n_library, len(chosen)))
    centroids = selection @ take_rows(vectors, chosen)
    if sparse.issparse(centroids):
        expanded = normalize_rows(sparse.csr_matrix(library) + feedback_weight * normalize_rows(sparse.csr_matrix(centroids)))
    else:
        expanded = normalize_rows(np.asarray(library) + feedback_weight * normalize_rows(np.asarray(centroids)))
    return dense_product(vectors, expanded, row_indices=candidate_rows)


class HybridModel(TermExplainer, Estimator):
    """litrank's default ranker: lexical + dense similarity with pseudo-relevance feedback.

    Parameters
    ----------
    embedder : object with ``embed(texts) -> ndarray``, optional
        Adds the dense signal (see :mod:`recommender.models.embeddings`).
    char_weight : float, default=0.5
        Weight of character 4-grams beside words in the lexical vectors.
    feedback_docs : int, default=8
        Candidates whose centroid expands each library paper (0 disables feedback).
    feedback_weight : float, default=1.0
        Weight of that centroid against the library paper itself, for a one-paper library;
        divided by the library size n.
    library_feedback : bool, default=True
        Other library papers may serve as feedback too (beside the collection's).
    dense_weight : float, default=1.0
        Weight of the standardised dense cosine against the standardised lexical one.
    short_text_words : int, default=10
        A library paper of fewer words (a title without its abstract, say) weighs the dense
        cosine by ``dense_weight * short_text_words / words`` instead: a few words make a
        noisy lexical match, while a sentence embedding of a title is still a fair one.
        Abstracts are not affected (CSFCube's shortest query has 75 words). See
        :meth:`dense_weights` and docs/models-and-quality.md for the measurements.
    dense_feedback_weight : float, default=0.0
        Pseudo-relevance feedback for the dense vectors too (0: plain dense cosine). With
        an embedder, feedback candidates are chosen by the fused first-pass score.
    profile_weight : float, default=0.0
        Weight of the whole-library BM25 profile (see :func:`profile_share`). Off by default:
        it helps a library on one topic and costs one on several (CSFCube composite libraries).
    author_weight : float, default=40.0
        Score per unit of log(1 + authors shared with library papers) / √n, in standard
        deviations of the text score.
    aggregation : "auto", "log2" or int, default="auto"
        How many best-matching library papers a score averages; "auto" uses
        :func:`aggregation_depth`, "log2" ⌈log2(n + 1)⌉ of n papers (the rule before the
        composite-library tuning: 3 at 7 papers, 9 at 500).
    disliked_weight : float, default=0.0
        Papers the user disliked (``judgements`` of -1) push down what resembles them: the
        score loses ``disliked_weight`` × the candidate's best standardised similarity to a
        disliked paper (see :meth:`_disliked_similarity`).
    random_state : int, default=0
        Seeds the LSA used for diversity; the scores themselves are deterministic.

    Attributes
    ----------
    scores_ : ndarray of shape (n_candidates,)
    components_ : dict of str to ndarray of shape (n_candidates,)
        The additive parts of ``scores_`` ("lexical", "dense", "profile", "authors").
    description_ : str
    """

    def __init__(self, embedder=None, char_weight: float = 0.5, feedback_docs: int = 8, feedback_weight: float = 1.0,
                 library_feedback: bool = True, dense_weight: float = 1.0, short_text_words: int = 10,
                 dense_feedback_weight: float = 0.0, profile_weight: float = 0.0, author_weight: float = 40.0,
                 aggregation: str | int = "auto", disliked_weight: float = 0.0, random_state: int = 0):
        self.embedder = embedder
        self.char_weight = char_weight
        self.feedback_docs = feedback_docs
        self.feedback_weight = feedback_weight
        self.library_feedback = library_feedback
        self.dense_weight = dense_weight
        self.short_text_words = short_text_words
        self.dense_feedback_weight = dense_feedback_weight
        self.profile_weight = profile_weight
        self.author_weight = author_weight
        self.aggregation = aggregation
        self.disliked_weight = disliked_weight
        self.random_state = random_state

    def fit(self, library: Sequence[Paper], candidates: Sequence[Paper], judgements: Mapping[int, int] | None = None,
            library_grades: Mapping[int, int] | None = None) -> "HybridModel":
        """Score ``candidates`` against ``library``: an index of the candidates (see
        :mod:`recommender.features.collection_index`) is built and the library scored against it.

        ``judgements`` maps candidate index -> -1 for disliked candidates: they never serve
        as feedback. ``library_grades`` is accepted for the common model interface; liked
        papers are already part of ``library``.
        """
        index = self.index_builder().build(candidates)
        return fit_on_index(self, index, library, None, judgements, library_grades)

    def dense_weights(self, library: Sequence[Paper]) -> np.ndarray:
        """The dense signal's weight for each library paper, shape (n_library,):
        ``dense_weight``, raised for papers of fewer than ``short_text_words`` words."""
        n_words = np.array([len(words(paper.text)) for paper in library], dtype=np.float64)
        return self.dense_weight * np.maximum(1.0, self.short_text_words / np.maximum(n_words, 1.0))

    def index_builder(self):
        """The :class:`~recommender.features.collection_index.CollectionIndexBuilder` this model scores
        against: character n-grams when ``char_weight`` > 0, the model's embedder."""
        return CollectionIndexBuilder(use_char=self.char_weight > 0, embedder=self.embedder,
                                      random_state=self.random_state)

    def fit_representations(self, rep: Representations, library_rows: np.ndarray, candidate_rows: np.ndarray,
                            library: Sequence[Paper], judgements: Mapping[int, int] | None = None,
                            library_grades: Mapping[int, int] | None = None) -> "HybridModel":
        """:meth:`fit` on precomputed representations (``library_rows`` below ``rep.n_library``)."""
        self.rep_, self.library_rows_, self.candidate_rows_ = rep, np.asarray(library_rows), np.asarray(candidate_rows)
        n_candidates, n_library = len(self.candidate_rows_), len(self.library_rows_)
        if n_library == 0:
            raise ValueError("the library has no papers to rank against")
        # Feedback comes from the collection and, where the library has more than one paper,
        # from the library itself: a user's other papers are real relevance feedback.
        feedback_rows = np.concatenate([self.candidate_rows_, self.library_rows_]) if self.library_feedback \
            else self.candidate_rows_
        lexical_vectors, lexical_block = self._lexical(rep)
        dense = "embedding" in rep.vectors and self.dense_weight > 0
        if dense:
            dense_weights = self.dense_weights(library)
            first_pass = self._first_pass(lexical_block, feedback_rows)
            first_pass += dense_weights * self._first_pass(rep.blocks["embedding"], feedback_rows)
        else:
            # Standardising a column keeps its order: the plain cosines choose the same feedback.
            first_pass = _block_part(lexical_block, feedback_rows, self.library_rows_)
        del lexical_block  # only chose the feedback: not kept beside the expanded product (61 MB at 30,000)
        for index, value in (judgements or {}).items():
            if value < 0:  # a disliked paper is no feedback
                first_pass[index] = -np.inf
        if self.library_feedback:
            first_pass[n_candidates + np.arange(n_library), np.arange(n_library)] = -np.inf  # nor is the paper itself
        # The feedback chosen once for both channels; the scores that chose it are let go before
        # the products (30,000 candidates: 61 MB).
        top = feedback_top(first_pass, self.feedback_docs)
        del first_pass
        lexical = standardize_columns(feedback_expanded_similarity(
            lexical_vectors, self.library_rows_, self.candidate_rows_, feedback_rows, None, self.feedback_docs,
            self.feedback_weight / n_library, top=top), in_place=True)
        fused = lexical
        if dense:
            dense_z = dense_weights * standardize_columns(feedback_expanded_similarity(
                rep.vectors["embedding"], self.library_rows_, self.candidate_rows_, feedback_rows, None,
                self.feedback_docs, self.dense_feedback_weight / n_library, top=top), in_place=True)
            fused = lexical + dense_z
        text_score, columns = _top_mean(fused, self._depth(n_library))
        self.components_ = {"lexical": np.take_along_axis(lexical, columns, axis=1).mean(axis=1)}
        if dense:
            self.components_["dense"] = np.take_along_axis(dense_z, columns, axis=1).mean(axis=1)
        if n_library > 1 and self.profile_weight > 0:
            profile = library_query_bm25(rep, self.candidate_rows_, self.library_rows_)
            self.components_["profile"] = profile_share(n_library, self.profile_weight) * standardize_columns(
                profile[:, None])[:, 0]
        self.components_["authors"] = self.author_weight * np.log1p(self._shared_authors(rep)) / np.sqrt(n_library)
        disliked = np.array(sorted(i for i, value in (judgements or {}).items() if value < 0), dtype=np.int64)
        if len(disliked) and self.disliked_weight > 0:
            self.components_["disliked"] = -self.disliked_weight * self._disliked_similarity(
                rep, lexical_vectors, disliked, dense_weights if dense else None)
        self.scores_ = text_score + sum(values for name, values in self.components_.items()
                                        if name in ("profile", "authors", "disliked"))
        parts = ["words and character n-grams with pseudo-relevance feedback"]
        if dense:
            parts.append(f"{getattr(self.embedder, 'model_id', 'dense')} embeddings")
        self.description_ = f"hybrid: {' + '.join(parts)}"
        return self

    def _shared_authors(self, rep: Representations) -> np.ndarray:
        """Authors each candidate shares with the library papers, summed over them (float32, as
        the author block holds them: whole numbers, exact)."""
        if rep.author_rows is None:
            return _block_part(rep.blocks["authors"], self.candidate_rows_, self.library_rows_).sum(axis=1)
        # The author block's row sums without the block: the library's author counts, once.
        library_authors = np.asarray(rep.author_rows[self.library_rows_].sum(axis=0), dtype=np.float32).ravel()
        return np.asarray(rep.author_rows[self.candidate_rows_] @ library_authors).ravel()

    def _depth(self, n: int) -> int:
        """How many best-matching papers of ``n`` a score averages (``aggregation``)."""
        return depth_for(self.aggregation, n)

    def _disliked_similarity(self, rep: Representations, lexical_vectors, disliked: np.ndarray,
                             dense_weights: np.ndarray | None) -> np.ndarray:
        """Each candidate's best similarity to a disliked candidate (positions ``disliked``),
        shape (n_candidates,): the lexical cosine and (``dense_weights`` given) the dense one,
        each standardised over the candidates per disliked paper and fused as for library papers
        (with the library's median dense weight). A disliked paper's own score is its
        similarity to itself, which leaves it last."""
        rows = self.candidate_rows_[disliked]
        fused = standardize_columns(dense_product(lexical_vectors, take_rows(lexical_vectors, rows),
                                                  row_indices=self.candidate_rows_), in_place=True)
        if dense_weights is not None:
            vectors = rep.vectors["embedding"]
            fused += float(np.median(dense_weights)) * standardize_columns(
                dense_product(vectors, take_rows(vectors, rows), row_indices=self.candidate_rows_), in_place=True)
        return fused.max(axis=1)

    def _first_pass(self, block: np.ndarray, feedback_rows: np.ndarray) -> np.ndarray:
        """Standardised (over the candidates) scores of the feedback papers, (n_feedback, n_library)."""
        scores = _block_part(block, feedback_rows, self.library_rows_)
        return standardize_columns(scores, scores[: len(self.candidate_rows_)])

    def _lexical(self, rep: Representations):
        """The joined word | character vectors (unit rows, float64: the scores are computed in it)
        and their (N, n_library) cosine block in float32, which only chooses the feedback."""
        word = rep.vectors["word"]
        if "char" not in rep.vectors or self.char_weight <= 0:
            return word, rep.blocks["word"]
        weight = float(self.char_weight)
        scale = 1.0 / np.sqrt(1.0 + weight ** 2)
        parts, counts = [word, rep.vectors["char"]], [rep.column_counts.get("word"), rep.column_counts.get("char")]
        # One product of the joined rows (float32 weights keep them float32), not a word and a
        # character block added: the same cosines, in half the passes over the collection.
        first = SideBySide(parts, [np.float32(scale), np.float32(weight * scale)], counts)
        return SideBySide(parts, [scale, weight * scale], counts), dense_product(first, first.take(self.library_rows_))

    _DRIVER_LABELS = {"lexical": "shared words and phrases", "dense": "embeddings: similar meaning",
                      "profile": "your library as a whole", "authors": "authors of your papers",
                      "disliked": "papers you disliked"}

    def drivers(self, candidate_index: int, n: int = 3) -> list[Driver]:
        """The parts of the score that raised this candidate most (in standard deviations)."""
        parts = [(self._DRIVER_LABELS[name], float(values[candidate_index])) for name, values in self.components_.items()]
        parts.sort(key=lambda item: -item[1])
        return [Driver(name, value) for name, value in parts[:n] if value > 0]


def score_library(index: CollectionIndex, library: Sequence[Paper], model=None, candidate_rows=None) -> np.ndarray:
    """One score per collection paper (or per ``candidate_rows``) for ``library``, by ``model``
    (default: ``HybridModel()``, without embeddings; pass ``HybridModel(embedder=...)`` with the
    index's embedder for the dense signal)."""
    if model is None:
        model = HybridModel()
    return np.asarray(fit_on_index(model, index, library, candidate_rows).scores_)
