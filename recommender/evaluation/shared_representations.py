"""Representations shared by all tasks of a benchmark configuration.

Every task of a configuration ranks the same collection; only the library (and, in the
authors track, one removed author name) differs. Vectorising the collection once for all
tasks and slicing per task makes a 450-task run take minutes instead of hours. The only
difference to a production run is that term statistics (IDF, LSA) come from the collection
plus all tasks' libraries rather than from one library.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from recommender.features.representations import RepresentationBuilder, Representations, author_block
from recommender.paper import Paper


class SharedRepresentations:
    """Vectors of the union of all tasks' libraries and the collection, sliced per task.

    Parameters
    ----------
    libraries : sequence of list of Paper
        Every task's library.
    collection : list of Paper
        The shared collection (the text of its papers is the same in every task).
    builder : RepresentationBuilder, optional
    """

    def __init__(self, libraries: Sequence[Sequence[Paper]], collection: Sequence[Paper],
                 builder: RepresentationBuilder | None = None):
        self._row_of_id: dict[str, int] = {}
        universe: list[Paper] = []
        for library in libraries:
            for paper in library:
                if paper.id not in self._row_of_id:
                    self._row_of_id[paper.id] = len(universe)
                    universe.append(paper)
        self.n_library_universe = len(universe)
        for paper in collection:
            if paper.id in self._row_of_id:
                raise ValueError(f"paper {paper.id} is both in a library and in the collection")
            self._row_of_id[paper.id] = len(universe)
            universe.append(paper)
        # Authors are per task (the authors track removes one name per task): no author block here.
        text_only = [Paper(id=p.id, title=p.title, abstract=p.abstract, title_derived=p.title_derived,
                           date_added=p.date_added) for p in universe]
        self.universe = (builder or RepresentationBuilder()).build(text_only, self.n_library_universe)

    def for_task(self, library: Sequence[Paper], collection: Sequence[Paper]) -> Representations:
        """Representations of ``library + collection`` (library rows first), as the model expects."""
        rows = np.array([self._row_of_id[paper.id] for paper in list(library) + list(collection)])
        library_rows = rows[: len(library)]
        universe = self.universe
        term_counts, weights = universe.bm25()
        task = Representations(n_library=len(library), word_vectorizer=universe.word_vectorizer,
                               bm25_weights=weights[rows], term_counts=term_counts[rows],
                               embedder_id=universe.embedder_id)
        for name, vectors in universe.vectors.items():
            task.vectors[name] = vectors[rows]
        for name, block in universe.blocks.items():
            if name != "authors":
                task.blocks[name] = block[np.ix_(rows, library_rows)]
        task.blocks["authors"], task.has_authors = author_block(list(library) + list(collection), len(library))
        return task
