"""Any model (hybrid, learned, similarity) fitted on a library against a prebuilt collection index."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from recommender.features.collection_index import CollectionIndex
from recommender.paper import Paper


def fit_on_index(model, index: CollectionIndex, library: Sequence[Paper], candidate_rows=None,
                 judgements: Mapping[int, int] | None = None, library_grades: Mapping[int, int] | None = None):
    """Fit ``model`` (hybrid, learned or similarity) on ``library`` against the index.

    ``candidate_rows`` (default: every paper) are the collection rows to score, in the order
    of ``model.scores_``; ``judgements`` is keyed by position in them.
    """
    library = list(library)
    rows = np.arange(index.n_papers) if candidate_rows is None else np.asarray(candidate_rows, dtype=np.int64)
    rep = index.representations(library, embedder=getattr(model, "embedder", None))
    return model.fit_representations(rep, np.arange(len(library)), len(library) + rows, library, judgements,
                                     library_grades)
