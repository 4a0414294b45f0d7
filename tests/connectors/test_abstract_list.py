import logging

import connectors
from connectors.files import abstract_list
from tests.conftest import SEEDS, require


def test_four_seed_pages_hold_70_distinct_papers():
    papers = connectors.load(require(SEEDS))
    assert len(papers) == 70
    assert len({paper.id for paper in papers}) == 70
    assert all(paper.venue == "ICML" and paper.year == 2026 and paper.title_derived for paper in papers)
    titles = {paper.title for paper in papers}
    assert {"PoE-Bridge", "GeoFlow", "Eso-LMs: Esoteric Language Models"} <= titles


def test_each_page_and_its_chinese_header(caplog):
    pages = sorted(require(SEEDS).glob("*.txt"))
    counts = [len(connectors.load(page)) for page in pages]
    assert sum(counts) == 76  # the pages overlap: 76 paragraphs, 70 papers
    chinese = next(page for page in pages if "论文列表" in page.read_text(encoding="utf-8").splitlines()[0])
    papers = connectors.load(chinese)
    assert {(p.venue, p.year) for p in papers} == {("ICML", 2026)}
    geoflow = next(p for p in papers if p.title == "GeoFlow")
    assert geoflow.url == "https://github.com/ZheruiHuang/GeoFlow"
    assert "[" not in geoflow.abstract and "](" not in geoflow.abstract


def test_markup_is_cleaned_and_math_kept_readable():
    papers = connectors.load(require(SEEDS))
    prispec = next(p for p in papers if p.title == "PriSpecNet")
    assert "Lévy" in prispec.abstract and "σ-algebra" in prispec.abstract
    assert "**" not in prispec.abstract and "\\" not in prispec.abstract
    assert "256 × 256" in prispec.abstract


def test_header_parsing_and_no_header():
    assert abstract_list.parse_header("ICML 2026 Papers") == ("ICML", 2026)
    assert abstract_list.parse_header("ICML 2026 论文列表") == ("ICML", 2026)
    assert abstract_list.parse_header("Accepted papers of NeurIPS 2025") == ("NeurIPS", 2025)
    text = ("We propose FooNet, a network that does things well across many benchmarks in vision.\n\n"
            "We introduce BarFlow, a flow that does other things across many benchmarks in language.\n")
    papers = abstract_list.loads(text, "x.txt")
    assert [p.title for p in papers] == ["FooNet", "BarFlow"]
    assert papers[0].venue == "" and papers[0].year is None


def test_repeated_abstract_in_one_file_is_one_paper(tmp_path, caplog):
    paragraph = "We propose FooNet, a network that does things well across many benchmarks in vision and language."
    path = tmp_path / "list.txt"
    path.write_text(f"ICLR 2018 Papers\n\n{paragraph}\n\n{paragraph}\n", encoding="utf-8")
    with caplog.at_level(logging.INFO, logger="litrank"):
        papers = connectors.load(path)
    assert len(papers) == 1 and papers[0].venue == "ICLR" and papers[0].id.startswith("iclr2018-")
    assert "repeated" in caplog.text
