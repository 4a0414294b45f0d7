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
   Each paper's mean and spread over the candidates are first moved towards the library's, as
   if ``column_prior`` candidates had shown the library's own: over a conference's 3,000 papers
   they decide alone, over a short list of 15 they hardly count
   (:func:`~recommender.models.aggregation.shrink_to_library`).

A candidate's score adds up to four parts:

* **text**: the mean of its ``k`` best lexical per-library-paper scores (``k``: how many
  papers the library holds on one topic, 1 for a one-paper library; see
  :func:`~recommender.models.aggregation.topic_depth`), each
  library paper's scores divided by a scale it shares in part with the library's other papers
  (:func:`~recommender.models.aggregation.library_spread`), plus, with an embedder, its best
  dense score (``dense_depth``), each channel by the library paper it matches best (a title
  without abstract trusted for its meaning more than its words: ``short_text_words``);
* **profile** (off by default, ``profile_weight``): BM25 of the candidate with the whole
  library as one query, weighted by :func:`profile_share`: what the library's papers have in
  common, which helps a library on one topic and costs one on several;
* **authors**: ``author_weight`` × log(1 + authors shared with library papers, summed over
  the library) / √n: several papers of a candidate's authors are close to a statement of
  interest, one shared name in a large library is a nudge (zero when no paper lists authors);
* **disliked** (``disliked_weight``, off by default): minus the best similarity to a paper
  the user disliked.

The text part was tuned on CSFCube ``fold1_dev``: query papers, libraries of 5-85 papers on several
topics (``benchmarks/tune_fusion.py``); the feedback's 1/n and ``author_weight`` on author continuity.

The pseudo-relevance feedback only this model uses (:func:`feedback_top`,
:func:`feedback_expanded_similarity`) is in :mod:`recommender.models.pseudo_feedback`; how the
per-library-paper scores become one is in :mod:`recommender.models.aggregation`.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from recommender.estimator import Estimator
from recommender.features.collection_index import CollectionIndex, CollectionIndexBuilder
from recommender.features.representations import Representations
from recommender.features.sparse_products import SideBySide, dense_product, take_rows
from recommender.models.aggregation import (
    TOP_K_CHUNK,
    block_part,
    chunked_column_top_k,
    chunked_top_mean,
    column_mean_and_spread,
    column_scale,
    depth_for,
    profile_share,
    standardize_columns,
    standardized_chunks,
    top_mean,
)
from recommender.models.index_fit import fit_on_index
from recommender.models.pseudo_feedback import feedback_expanded_similarity
from recommender.models.scoring import Driver, TermExplainer
from recommender.models.signals import library_query_bm25
from recommender.paper import Paper
from recommender.text import words


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
        A library paper of fewer words (a title without its abstract, say) trusts its dense
        cosine over its lexical one by ``short_text_words / words``: a few words make a noisy
        lexical match, a title's sentence embedding is still a fair one. Abstracts are not
        affected (:meth:`dense_weights`, :meth:`short_text_trust`).
    dense_feedback_weight : float, default=0.0
        Pseudo-relevance feedback for the dense vectors too (0: plain dense cosine). With
        an embedder, feedback candidates are chosen by the fused first-pass score.
    profile_weight : float, default=0.0
        Weight of the whole-library BM25 profile (see :func:`profile_share`). Off by default:
        it helps a library on one topic and costs one on several (CSFCube composite libraries).
    author_weight : float, default=40.0
        Score per unit of log(1 + authors shared with library papers) / √n, in standard
        deviations of the text score.
    aggregation : "topics", "auto", "log2" or int, default="topics"
        How many best-matching library papers a score averages: "topics"
        :func:`~recommender.models.aggregation.topic_depth` (how many papers the library holds
        on one topic, at least two: better than two on balanced publication lists and on lists
        of 8-12 topics, worse where a main line meets side interests), "auto" two (one for a
        one-paper library; the rule before), "log2" ⌈log2(n + 1)⌉ of n papers (the rule before
        the composite-library tuning: 3 at 7 papers, 9 at 500), or a number.
    column_scale : {"library", "own"}, default="library"
        What each library paper's standardised cosines are divided by: "library" the
        geometric mean of the column's own deviation over the candidates and the library's
        pooled one (:func:`~recommender.models.aggregation.library_spread`), "own" its own
        deviation alone (the rule before).
    column_prior : float, default=300.0
        How many candidates' worth the library's pooled mean and spread count for beside each
        library paper's own, before its column is standardised
        (:func:`~recommender.models.aggregation.shrink_to_library`): a conference's 3,000
        papers decide each paper's scale nearly alone, a short list of 15 hardly at all.
        0 leaves each column's own statistics (the rule before).
    disliked_weight : float, default=0.0
        Papers the user disliked (``judgements`` of -1) push down what resembles them: the
        score loses ``disliked_weight`` × the candidate's best standardised similarity to a
        disliked paper (see :meth:`_disliked_similarity`).
    dense_depth : int or None, default=1
        How many best-matching library papers the dense channel averages on its own, beside the
        lexical channel's ``aggregation_depth_``: with 1 a candidate's text score is its lexical
        score, averaged over its best lexical matches, plus its dense score against the library
        paper closest in meaning, which need not be the same paper. None adds the two channels
        per library paper first and averages the best sums (the rule before; measured in
        docs/models-and-quality.md). Nothing changes without an embedder or for one paper.
    random_state : int, default=0
        Seeds the LSA used for diversity; the scores themselves are deterministic.

    Attributes
    ----------
    scores_ : ndarray of shape (n_candidates,)
    aggregation_depth_ : int
        How many best-matching library papers each score averaged.
    components_ : dict of str to ndarray of shape (n_candidates,)
        The additive parts of ``scores_`` ("lexical", "dense", "profile", "authors").
    description_ : str
    """

    def __init__(self, embedder=None, char_weight: float = 0.5, feedback_docs: int = 8, feedback_weight: float = 1.0,
                 library_feedback: bool = True, dense_weight: float = 1.0, short_text_words: int = 10,
                 dense_feedback_weight: float = 0.0, profile_weight: float = 0.0, author_weight: float = 40.0,
                 aggregation: str | int = "topics", column_scale: str = "library", column_prior: float = 300.0,
                 disliked_weight: float = 0.0, dense_depth: int | None = 1, random_state: int = 0):
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
        self.column_scale = column_scale
        self.column_prior = column_prior
        self.disliked_weight = disliked_weight
        self.dense_depth = dense_depth
        self.random_state = random_state

    def fit(self, library: Sequence[Paper], candidates: Sequence[Paper], judgements: Mapping[int, int] | None = None,
            library_grades: Mapping[int, int] | None = None) -> "HybridModel":
        """Score ``candidates`` against ``library``: an index of the candidates (see
        :mod:`recommender.features.collection_index`) is built and the library scored against it.

        ``judgements`` maps candidate index -> -1 for disliked candidates: they never serve
        as feedback. ``library_grades`` is accepted for the common model interface; liked
        papers are already part of ``library``.
        """
        index = self.index_builder().build(candidates, library=library)
        return fit_on_index(self, index, library, None, judgements, library_grades)

    def dense_weights(self, library: Sequence[Paper]) -> np.ndarray:
        """Each library paper's dense weight, shape (n_library,): ``dense_weight`` / :meth:`short_text_trust`."""
        return self.dense_weight / self.short_text_trust(library)

    def short_text_trust(self, library: Sequence[Paper]) -> np.ndarray:
        """Each library paper's words / ``short_text_words``, at most 1, shape (n_library,). With
        ``dense_depth`` a short text's two parts are scaled by it rather than its dense part raised:
        that part is a candidate's best paper, which a raised weight would make a title's."""
        n_words = np.array([len(words(paper.text)) for paper in library], dtype=np.float64)
        return np.minimum(1.0, np.maximum(n_words, 1.0) / max(self.short_text_words, 1e-9))

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
        n_library = len(self.library_rows_)
        if n_library == 0:
            raise ValueError("the library has no papers to rank against")
        pooled = self._pooled  # an unknown column_scale fails here, before any product
        if self.dense_depth is not None and int(self.dense_depth) < 1:
            raise ValueError(f"dense_depth must be None or at least 1, not {self.dense_depth!r}")
        # Feedback comes from the collection and, where the library has more than one paper,
        # from the library itself: a user's other papers are real relevance feedback.
        feedback_rows = np.concatenate([self.candidate_rows_, self.library_rows_]) if self.library_feedback \
            else self.candidate_rows_
        lexical_vectors, lexical_block = self._lexical(rep)
        self.aggregation_depth_ = self._depth(n_library, lexical_block)
        dense = "embedding" in rep.vectors and self.dense_weight > 0
        dense_weights = self.dense_weights(library) if dense else None
        # The feedback, chosen once for both channels, from first-pass scores that never exist
        # whole: (N, n_library) float64 twice over was 244 MB at 30,000 candidates.
        cached = dense and "embedding" in rep.blocks  # (a look that computes nothing)
        top = self._feedback_top(rep, lexical_block, feedback_rows, judgements, dense_weights)
        del lexical_block  # only chose the feedback: not kept beside the expanded product (61 MB at 30,000)
        if dense and not cached:
            rep.blocks.pop("embedding", None)  # made for the first pass alone (61 MB at 30,000)
        lexical_raw = feedback_expanded_similarity(
            lexical_vectors, self.library_rows_, self.candidate_rows_, feedback_rows, None, self.feedback_docs,
            self.feedback_weight / n_library, top=top)
        trust = self.dense_weight / dense_weights if dense else None  # short_text_trust, from the weights at hand
        if not dense or self.dense_depth:  # the lexical channel by its own best library papers
            # Standardised (and weighted) a chunk at a time, as the dense channel below, not in
            # a whole copy (at 30,000 candidates 120 MB beside the cosines' own 120 MB, the run's
            # peak): the values are the same, element for element.
            mean, spread = column_scale(lexical_raw, pooled=pooled, prior=self.column_prior)
            lexical_part, _ = chunked_top_mean(
                standardized_chunks(lexical_raw, mean, spread, scales=(trust,) if dense else ()),
                lexical_raw.shape, self.aggregation_depth_)
            del lexical_raw  # before the dense product: the two blocks are never held together
        else:
            lexical = standardize_columns(lexical_raw, in_place=True, pooled=pooled, prior=self.column_prior)
        if dense:
            dense_raw = feedback_expanded_similarity(
                rep.vectors["embedding"], self.library_rows_, self.candidate_rows_, feedback_rows, None,
                self.feedback_docs, self.dense_feedback_weight / n_library, top=top)
        if not dense:
            self.components_ = {"lexical": lexical_part}
            text_score = lexical_part.copy()
        elif self.dense_depth:
            # Standardised and weighted a chunk at a time: a float32 block is never widened whole.
            mean, spread = column_scale(dense_raw, pooled=pooled, prior=self.column_prior)
            dense_part, _ = chunked_top_mean(standardized_chunks(dense_raw, mean, spread, scales=(dense_weights, trust)),
                                             dense_raw.shape, min(int(self.dense_depth), n_library))
            self.components_ = {"lexical": lexical_part, "dense": dense_part}
            text_score = lexical_part + dense_part
        else:  # both channels at the same library papers
            dense_z = standardize_columns(dense_raw, in_place=True, pooled=pooled, prior=self.column_prior)
            dense_z *= dense_weights
            text_score, columns = top_mean(lexical + dense_z, self.aggregation_depth_)
            self.components_ = {"lexical": np.take_along_axis(lexical, columns, axis=1).mean(axis=1),
                                "dense": np.take_along_axis(dense_z, columns, axis=1).mean(axis=1)}
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
            return block_part(rep.blocks["authors"], self.candidate_rows_, self.library_rows_).sum(axis=1)
        # The author block's row sums without the block: the library's author counts, once.
        library_authors = np.asarray(rep.author_rows[self.library_rows_].sum(axis=0), dtype=np.float32).ravel()
        return np.asarray(rep.author_rows[self.candidate_rows_] @ library_authors).ravel()

    @property
    def _pooled(self) -> bool:
        """Whether the columns are scaled by
        :func:`~recommender.models.aggregation.library_spread` (``column_scale``)."""
        if self.column_scale not in ("library", "own"):
            raise ValueError(f"column_scale must be 'library' or 'own', not {self.column_scale!r}")
        return self.column_scale == "library"

    def _depth(self, n: int, lexical_block: np.ndarray) -> int:
        """How many best-matching papers of ``n`` a score averages (``aggregation``); "topics"
        reads the library papers' lexical cosines to each other, in standard deviations of the
        candidates' (``lexical_block``: the (N, n_library) first-pass cosines)."""
        if self.aggregation != "topics" or n <= 1:
            return depth_for(self.aggregation, n)
        mean, spread = column_mean_and_spread(lexical_block, self.candidate_rows_)
        mean, spread = mean[self.library_rows_], spread[self.library_rows_]  # the columns _block_part takes
        spread[spread == 0] = 1.0
        own = block_part(lexical_block, self.library_rows_, self.library_rows_).astype(np.float64)
        return depth_for(self.aggregation, n, (own - mean) / spread)

    def _disliked_similarity(self, rep: Representations, lexical_vectors, disliked: np.ndarray,
                             dense_weights: np.ndarray | None) -> np.ndarray:
        """Each candidate's best similarity to a disliked candidate (positions ``disliked``),
        shape (n_candidates,): the lexical cosine and (``dense_weights`` given) the dense one,
        each standardised over the candidates per disliked paper and fused as for library papers
        (with the library's median dense weight). A disliked paper's own score is its
        similarity to itself, which leaves it last."""
        rows = self.candidate_rows_[disliked]
        fused = standardize_columns(dense_product(lexical_vectors, take_rows(lexical_vectors, rows),
                                                  row_indices=self.candidate_rows_), in_place=True,
                                    pooled=self._pooled, prior=self.column_prior)
        if dense_weights is not None:
            vectors = rep.vectors["embedding"]
            fused += float(np.median(dense_weights)) * standardize_columns(
                dense_product(vectors, take_rows(vectors, rows), row_indices=self.candidate_rows_), in_place=True,
                pooled=self._pooled, prior=self.column_prior)
        return fused.max(axis=1)

    def _feedback_top(self, rep: Representations, lexical_block: np.ndarray, feedback_rows: np.ndarray,
                      judgements: Mapping[int, int] | None, dense_weights: np.ndarray | None) -> np.ndarray | None:
        """:func:`feedback_top` of the first pass, whose scores are made a chunk of rows at a time.

        The first pass scores each feedback paper (rows) against each library paper (columns):
        with an embedder the lexical and dense cosines, each standardised over the candidates and
        the dense one weighted by ``dense_weights``, added; without one the lexical cosines (a
        column's order is its standardised order). Disliked candidates and each library paper
        itself may not serve (``-inf``)."""
        n_candidates, n_library = len(self.candidate_rows_), len(self.library_rows_)
        excluded = np.zeros(len(feedback_rows), dtype=bool)
        excluded[[index for index, value in (judgements or {}).items() if value < 0]] = True
        finite = np.full(n_library, len(feedback_rows) - excluded.sum())
        if self.library_feedback:
            finite -= ~excluded[n_candidates + np.arange(n_library)]
        k = int(min(self.feedback_docs, finite.min()))
        if k <= 0:
            return None
        channels = []
        if dense_weights is not None:
            for block, weights in ((lexical_block, ()), (rep.blocks["embedding"], (dense_weights,))):
                mean, spread = column_scale(block, feedback_rows[:n_candidates], self.library_rows_,
                                            pooled=self._pooled, prior=self.column_prior)
                channels.append(standardized_chunks(block, mean, spread, feedback_rows, self.library_rows_, weights))
            buffer = np.empty((min(TOP_K_CHUNK, len(feedback_rows)), n_library))

        def chunks():
            for start in range(0, len(feedback_rows), TOP_K_CHUNK):
                stop = min(start + TOP_K_CHUNK, len(feedback_rows))
                if channels:  # the channels' standardised scores added, a few rows at a time, into one buffer
                    chunk = buffer[: stop - start]
                    for (row, lexical), (_, dense) in zip(*channels):
                        np.add(lexical, dense, out=chunk[row - start: row - start + len(lexical)])
                        if row + len(lexical) >= stop:
                            break
                else:
                    chunk = block_part(lexical_block, feedback_rows[start:stop], self.library_rows_)
                chunk[excluded[start:stop]] = -np.inf
                if self.library_feedback:  # nor is the paper itself
                    own = np.arange(max(start, n_candidates), min(stop, n_candidates + n_library))
                    chunk[own - start, own - n_candidates] = -np.inf
                yield start, chunk

        return chunked_column_top_k(chunks(), k)

    def _lexical(self, rep: Representations):
        """The joined word | character vectors (unit rows, float64: the scores are computed in it)
        and their (N, n_library) cosine block in float32, which only chooses the feedback.

        The scores stay float64: in float32 the cosines move by up to 5.6e-7 and the partitioned
        path (:mod:`recommender.scale`), summing in another order, would no longer agree with
        ``rank`` to 1e-9. What made the memory is their standardised copy, now made a chunk of
        rows at a time (:meth:`fit_representations`)."""
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
