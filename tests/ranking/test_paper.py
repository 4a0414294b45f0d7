from recommender.paper import IdentityIndex, Paper, deduplicate
from recommender.text import find_arxiv_id, normalize_doi, normalize_title, surname

ABSTRACT = ("We study denoising diffusion probabilistic models and show that a reweighted variational "
            "bound yields sample quality that rivals generative adversarial networks on images.")


def test_identity_prefers_doi_then_arxiv_then_title_then_abstract():
    assert Paper("a", title="X", doi="https://doi.org/10.1000/ABC").identity == "doi:10.1000/abc"
    assert Paper("a", title="X", arxiv_id="2006.11239").identity == "arxiv:2006.11239"
    assert Paper("a", title="{Denoising} Diffusion!", authors=["Jonathan Ho"]).identity == "title:denoising diffusion|ho"
    assert Paper("a", title="Derived", abstract=ABSTRACT, title_derived=True).identity.startswith("abstract:")


def test_same_paper_found_across_sources_by_any_shared_key():
    library = [
        Paper("ho2020", title="Denoising Diffusion Probabilistic Models", authors=["Ho, Jonathan"], arxiv_id="2006.11239"),
        Paper("song", title="Score-Based Generative Modeling", doi="10.5555/xyz"),
    ]
    index = IdentityIndex(library)
    # Same title and first author, written differently, no ids: found.
    assert index.find(Paper("x", title="Denoising diffusion probabilistic models.", authors=["Jonathan Ho", "Ajay Jain"])) is library[0]
    # Title known but no authors on one side: still the same paper.
    assert Paper("y", title="DENOISING DIFFUSION PROBABILISTIC MODELS") in index
    # Same title, different first author: a different paper.
    assert Paper("z", title="Denoising Diffusion Probabilistic Models", authors=["Jane Doe"]) not in index
    assert index.find(Paper("w", title="Other", doi="doi:10.5555/XYZ")) is library[1]


def test_untitled_abstract_matches_the_titled_record_of_the_same_abstract():
    titled = Paper("conf-1", title="Real Title", abstract=ABSTRACT)
    untitled = Paper("list-1", title="Derived", abstract="  " + ABSTRACT.replace(" ", "  "), title_derived=True)
    assert untitled in IdentityIndex([titled])
    # A placeholder abstract is no identity.
    assert Paper("p", abstract="No abstract available.", title="A", title_derived=True).identity_keys() == []


def test_identity_keys_follow_the_paper_when_it_changes():
    """Keys are made once per paper, and made again when what they are made of changes."""
    import pickle

    paper = Paper("a", title="Denoising Diffusion", authors=["Jonathan Ho"], abstract=ABSTRACT)
    first = paper.identity_keys()
    assert first == ["title:denoising diffusion|ho", first[1]] and first[1].startswith("abstract:")
    first.append("changed by the caller")  # a caller's list is its own
    assert paper.identity_keys() == first[:2]
    paper.doi = "10.1000/xyz"
    assert paper.identity_keys()[0] == "doi:10.1000/xyz"
    paper.arxiv_id = "2006.11239"
    assert paper.identity_keys()[1] == "arxiv:2006.11239"
    paper.authors[0] = "Ajay Jain"  # changed in place
    assert "title:denoising diffusion|jain" in paper.identity_keys()
    paper.title = "Another Title"
    assert "title:another title|jain" in paper.identity_keys()
    paper.abstract = "Short now."
    assert not any(key.startswith("abstract:") for key in paper.identity_keys())
    paper.title_derived = True
    assert paper.identity_keys() == ["doi:10.1000/xyz", "arxiv:2006.11239"]
    # The kept keys are no field: copies and equality ignore them.
    fresh = Paper("a", title="Another Title", authors=["Ajay Jain"], abstract="Short now.", doi="10.1000/xyz",
                  arxiv_id="2006.11239", title_derived=True)
    assert fresh == paper and pickle.loads(pickle.dumps(paper)) == paper


def test_deduplicate_keeps_first_occurrence():
    papers = [Paper("1", title="A Paper", authors=["Ann Lee"]), Paper("2", title="a paper", authors=["A. Lee"]),
              Paper("3", title="B Paper")]
    assert [p.id for p in deduplicate(papers)] == ["1", "3"]


def test_normalisers():
    assert normalize_title("{GeoFlow}: Géometric  Flows!") == "geoflow geometric flows"
    assert normalize_doi("doi: 10.1145/3292500.3330701.") == "10.1145/3292500.3330701"
    assert normalize_doi("not a doi") == ""
    assert find_arxiv_id("https://arxiv.org/abs/2006.11239v2") == "2006.11239"
    assert find_arxiv_id("arXiv preprint arXiv:2107.03006") == "2107.03006"
    assert find_arxiv_id("2011.13456") == "2011.13456"
    assert find_arxiv_id("pages 1234.5678") == ""  # a bare number in prose is no arXiv id
    assert find_arxiv_id("arXiv:hep-th/9901001v1") == "hep-th/9901001"
    assert surname("Schölkopf, Bernhard") == "scholkopf"
    assert surname("Diederik P. Kingma") == "kingma"
