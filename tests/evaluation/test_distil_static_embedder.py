"""Fitting the static table to documents (benchmarks/distil_static_embedder.py --fit-texts): the
fitted table agrees with the teacher on texts it was not fitted on, far better than the table it
started from, and too few texts are refused. (The shipped table's own fit, on 20,000 conference
abstracts with all-MiniLM-L6-v2 as the teacher, is measured in docs/benchmarks.md.)"""
from __future__ import annotations

import numpy as np
import pytest
from tokenizers import Tokenizer

import connectors
from benchmarks.distil_static_embedder import _text_count, fit_to_documents, neighbour_overlap, pair_cosine_correlation
from benchmarks.distil_static_embedder import main as distil_main
from recommender.models.static_embeddings import bundled_table_dir
from tests.conftest import DATA, EXAMPLE_LIBRARY


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(bundled_table_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(512)
    return tokenizer


def _texts() -> list[str]:
    papers = connectors.load(EXAMPLE_LIBRARY) + connectors.load(DATA / "report-collection.jsonl")
    return [paper.text for paper in papers if len(paper.text.split()) >= 20]


def _topic_corpus(tokenizer: Tokenizer, n_texts: int = 600, seed: int = 0):
    """Texts of ten topics (each its own 100 words of the tokenizer's vocabulary, plus 100 words
    every topic uses) and a teacher that knows the topics: its vectors are the topic's centre
    plus noise. Texts of one topic share few words, so only a table that learned which words go
    together agrees with the teacher."""
    rng = np.random.default_rng(seed)
    vocabulary = sorted(word for word in tokenizer.get_vocab() if word.isalpha() and word.islower() and len(word) > 3)
    words = rng.choice(vocabulary, 1100, replace=False)
    topic_words, common = words[:1000].reshape(10, 100), words[1000:]
    labels = rng.integers(0, 10, n_texts)
    texts = [" ".join(np.concatenate([rng.choice(topic_words[t], 30), rng.choice(common, 30)])) for t in labels]
    teacher = rng.normal(size=(10, 16))[labels] + 0.3 * rng.normal(size=(n_texts, 16))
    return texts, teacher / np.linalg.norm(teacher, axis=1, keepdims=True)


def test_the_fitted_table_agrees_with_the_teacher_on_held_out_texts(tokenizer):
    texts, teacher = _topic_corpus(tokenizer)
    start = np.random.default_rng(1).normal(size=(tokenizer.get_vocab_size(), 8))  # knows no topic
    fitted = fit_to_documents(start, tokenizer, texts, teacher, ridge=0.01)
    assert fitted["table"].shape == start.shape and np.isfinite(fitted["table"]).all()
    assert fitted["held_out_texts"] == 60
    before, after = fitted["held_out_pair_correlation_distilled"], fitted["held_out_pair_correlation_fitted"]
    assert before < 0.3 and after > 0.85, (before, after)  # measured: 0.13 -> 0.92


def test_too_few_texts_for_the_dimensions_are_refused(tokenizer):
    texts = _texts()[:20]  # real abstracts: 18 to fit on, fewer than 4 a dimension
    start = np.zeros((tokenizer.get_vocab_size(), 8))
    with pytest.raises(ValueError, match="20 texts are too few to fit 8 dimensions"):
        fit_to_documents(start, tokenizer, texts, np.eye(20, 16), ridge=0.01)


def test_a_teacher_narrower_than_the_table_or_of_other_texts_is_refused(tokenizer):
    texts, teacher = _topic_corpus(tokenizer)
    with pytest.raises(ValueError, match="at least 32 dimensions"):
        fit_to_documents(np.zeros((tokenizer.get_vocab_size(), 32)), tokenizer, texts, teacher, ridge=0.01)
    with pytest.raises(ValueError, match="one per text"):
        fit_to_documents(np.zeros((tokenizer.get_vocab_size(), 8)), tokenizer, texts, teacher[:-1], ridge=0.01)


def test_agreement_is_full_for_the_teacher_itself_and_falls_with_what_the_table_misses():
    rng = np.random.default_rng(2)
    centres, labels = rng.normal(size=(10, 16)), rng.integers(0, 10, 600)
    teacher = centres[labels] + 0.3 * rng.normal(size=(600, 16))

    def agreement(vectors):
        return pair_cosine_correlation(vectors, teacher), neighbour_overlap(vectors, teacher)

    assert agreement(teacher * 3.0) == (1.0, 1.0)
    # Knowing each text's topic but nothing else: pair cosines still follow, nearest neighbours do not.
    correlation, overlap = agreement(centres[labels] + 0.01 * rng.normal(size=(600, 16)))
    assert correlation > 0.8 and overlap < 0.3, (correlation, overlap)  # measured: 0.95, 0.16
    correlation, overlap = agreement(rng.normal(size=teacher.shape))
    assert abs(correlation) < 0.1 and overlap < 0.1, (correlation, overlap)
    for measure in (pair_cosine_correlation, neighbour_overlap):
        with pytest.raises(ValueError, match="one per text"):
            measure(teacher[:-1], teacher)


def test_fit_texts_takes_a_count_or_all_and_refuses_anything_else(capsys):
    assert _text_count("20000") == 20000 and _text_count("all") is None and _text_count(" ALL ") is None
    with pytest.raises(SystemExit) as exit_info:
        distil_main(["--fit-texts", "most"])
    assert exit_info.value.code == 2
    assert "expected a number of texts or 'all', not 'most'" in capsys.readouterr().err
