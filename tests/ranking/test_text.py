import re
import sys

import pytest

from connectors.bibtex.latex import latex_to_text
from recommender.text import derive_title, strip_accents, truncate, words


@pytest.mark.parametrize("latex, text", [
    (r"Sch{\"o}lkopf and M\"{u}ller and \c{C}a\u{g}lar", "Schölkopf and Müller and Çağlar"),
    (r"Ma{\ss}e, {\'\i}ndice, \'{e}t\'e", "Maße, índice, été"),
    (r"{GeoFlow}: {B}ayesian {GAN}s", "GeoFlow: Bayesian GANs"),
    (r"$\alpha$-divergences in $O(n^2)$ on $256 \times 256$ images", "α-divergences in O(n^2) on 256 × 256 images"),
    (r"\emph{Fast} and {\it robust} \textbf{$\mathbb{R}^{d}$} 50\% \& \$5 --- ok", "Fast and robust ℝ^d 50% & $5 — ok"),
    (r"Pages 1--10 with~a tie and \unknowncmd kept", "Pages 1–10 with a tie and unknowncmd kept"),
    (r"$\texttt{DOIT}$ ($\textbf{D}$oob-$\textbf{O}$riented)", "DOIT (Doob-Oriented)"),
    (r"literal \{braces\}", "literal {braces}"),
])
def test_latex_to_text(latex, text):
    assert latex_to_text(latex) == text


@pytest.mark.parametrize("abstract, title", [
    ("In this paper, we introduce PoE-Bridge, a novel decoding framework that improves speed.", "PoE-Bridge"),
    ("OD flow matters. In this paper, we introduce GeoFlow, a novel framework that augments areas.", "GeoFlow"),
    ("We introduce Esoteric Language Models (Eso-LMs), a new family of models.", "Eso-LMs: Esoteric Language Models"),
    ("We propose GUDA (Group Unlearning-based Data Attribution) for diffusion models.", "GUDA: Group Unlearning-based Data Attribution"),
    ("Based on this, we propose Scaling the Prior (StP), which rescales the prior.", "StP: Scaling the Prior"),
    ("We propose a novel training-free sampler named Forward DPMSolver (F-DPMSolver), whose error is small.",
     "F-DPMSolver: Forward DPMSolver"),
    ("To address this, we propose a novel variable-length tokenizer that modulates length by merging tokens.",
     "Variable-length tokenizer that modulates length by merging tokens"),
    ("Sparse autoencoders (SAEs) decompose neural network activations into features, but many never fire.",
     "Sparse autoencoders decompose neural network activations into features"),
])
def test_derive_title(abstract, title):
    assert derive_title(abstract) == title


def test_derived_title_is_short():
    long_clause = "Word " * 60 + "end."
    assert len(derive_title(long_clause)) <= 72
    assert truncate("alpha beta gamma", 11) == "alpha beta…"


def test_words_are_the_runs_of_letters_and_digits_the_regular_expression_finds():
    """``words`` splits where ``[^\\W_]+`` ends a match, for every code point (one text of all
    of them, each between two letters) and for mixed texts."""
    pattern = re.compile(r"[^\W_]+")
    every = "".join(f"a{chr(code)}b " for code in range(sys.maxunicode + 1) if not 0xD800 <= code < 0xE000)
    texts = [every, "x_y __ 12 ab\u0301c ²³ a-b-c", "Ünïcödé naïve café — 𝒪(n) ∀x ∈ ℝ", "ÀB a\u0301 ﬁne Ⅻ",
             "", " \t"]
    for text in texts:
        assert words(text) == pattern.findall(strip_accents(text).lower())


def test_abstract_fingerprint_is_the_hash_of_the_abstracts_words():
    import hashlib

    import connectors
    from recommender.text import abstract_fingerprint
    from tests.conftest import DATA

    abstracts = [paper.abstract for paper in connectors.load(DATA / "report-collection.jsonl")]
    abstracts += ["snake_case and CamelCase, x_1 + y_2 = 3.5e-7; (a)--(b)\t\n\x0b\x0c\x1c\x7f end_",
                  "Naïve Bayes — Schölkopf’s kernel: 𝒪(n²) ∀x", "", "   ", "__", "Ünïcödé ﬁne Ⅻ"]
    assert any(text.isascii() for text in abstracts) and not all(text.isascii() for text in abstracts)
    for text in abstracts:
        want = hashlib.sha1(" ".join(words(text)).encode("utf-8")).hexdigest()[:16]
        assert abstract_fingerprint(text) == want, text
    assert abstract_fingerprint("Deep  learning,\tof GRAPHS!") == abstract_fingerprint("deep learning of graphs")
