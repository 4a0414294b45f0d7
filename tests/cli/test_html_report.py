"""The HTML report: its content as data, the page as a file, and the page in a real browser.

The browser tests drive Debian's headless Chromium through chromedriver (selenium). They skip
when Chromium is not installed, unless ``LITRANK_REQUIRE_BROWSER=1`` (set by ``.ci/run``, which
installs it), where a missing browser fails.
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import time
from pathlib import Path

import bibtexparser
import pytest
from click.testing import CliRunner

import connectors
from recommender.cli import main
from recommender.paper import Paper
from recommender.report.page_data import paper_links
from recommender.report.paper_map import PaperMap
from tests.conftest import DATA, EXAMPLE_LIBRARY, REPO

COLLECTION = DATA / "report-collection.jsonl"
ICML = REPO / "recommender" / "data" / "icml2026"
ARTIFACTS = REPO / "test-artifacts"


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> dict:
    """One report of the example library against the test collection and the bundled ICML pages."""
    out = tmp_path_factory.mktemp("report") / "picks.html"
    os.environ.setdefault("LITRANK_EMBEDDER", "none")
    result = CliRunner().invoke(main, ["rank", "-l", str(EXAMPLE_LIBRARY), "-c", str(COLLECTION), "-c", str(ICML),
                                       "-n", "25", "-o", str(out)], env={"LITRANK_EMBEDDER": "none"})
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    figure = json.loads(html.unescape(re.search(r'<script id="figure" type="application/json">(.*?)</script>',
                                                text, re.S).group(1)))
    library = connectors.load(EXAMPLE_LIBRARY)
    collection = connectors.load(COLLECTION) + connectors.load(ICML)
    return {"path": out, "text": text, "figure": figure, "library": library, "collection": collection,
            "stderr": result.stderr}


def _points(figure: dict) -> int:
    return sum(len(trace["x"]) for trace in figure["data"])


def test_map_holds_every_library_paper_and_every_ranked_candidate(page):
    traces = {trace["name"]: trace for trace in page["figure"]["data"]}
    assert set(traces) == {"your library", "the collection", "picks (numbered)"}
    assert len(traces["picks (numbered)"]["x"]) == 25
    assert sorted(traces["picks (numbered)"]["customdata"]) == list(range(1, 26))
    assert len(traces["your library"]["x"]) == len(page["library"])
    # Nothing of the collection is in the example library, so every paper is a point.
    assert _points(page["figure"]) == len(page["library"]) + len(page["collection"])
    labels = [a["text"] for a in page["figure"]["layout"]["annotations"]]
    assert len(labels) >= 3 and all(label and not label.startswith("topic ") for label in labels)


def test_page_is_self_contained(page):
    text = page["text"]
    # Only links the reader clicks point outside; nothing is fetched to draw the page.
    assert not re.search(r'<(script|link|img|iframe)[^>]+(src|href)="(https?:)?//', text)
    assert "Plotly.newPlot" in text and len(text) > 1_000_000  # plotly.js inlined
    assert "cdn." not in re.sub(r"<script>.*?</script>", "", text, flags=re.S)


def test_picks_carry_title_reasons_links_and_bibtex(page):
    text = page["text"]
    articles = re.findall(r'<article class="pick".*?</article>', text, re.S)
    assert len(articles) == 25
    for article in articles:
        bib = html.unescape(re.search(r'<textarea class="bibtex"[^>]*>(.*?)</textarea>', article, re.S).group(1))
        entries = bibtexparser.loads(bib).entries
        assert len(entries) == 1 and entries[0]["title"] and "litrank: rank" in entries[0]["note"]
        assert 'class="because"' in article  # every pick has a library paper it is close to
    assert text.count('class="derived"') >= 1  # the ICML pages give no titles
    # The filter lists the library papers the picks came from, with their number of picks.
    options = re.findall(r'<option value="(\d+)">', text)
    assert options and len(set(options)) == len(options)


def test_paper_links_name_each_kind():
    paper = Paper(id="x", title="t", doi="10.1000/xyz", arxiv_id="2006.11239",
                  url="https://openreview.net/forum?id=abc", fields={"pdf": "https://openreview.net/pdf?id=abc"})
    assert [link["label"] for link in paper_links(paper)] == ["DOI", "arXiv", "OpenReview", "PDF"]
    assert paper_links(Paper(id="y", title="t", url="javascript:alert(1)")) == []


def test_paper_map_small_inputs_and_labels():
    import numpy as np

    coords = PaperMap().fit_transform(np.eye(3))
    assert coords.shape == (3, 2) and np.abs(coords).max() <= 1
    assert PaperMap().fit(np.ones((1, 4))).topic_labels_ == ["topic 1"]
    with pytest.raises(ValueError):
        PaperMap().fit(np.zeros((0, 4)))


def test_report_command_writes_html_and_rejects_other_extensions(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(main, ["report", "-l", str(EXAMPLE_LIBRARY), "-c", str(COLLECTION), "-n", "0"])
    assert result.exit_code == 0, result.output
    written = (tmp_path / "reading-list.html").read_text(encoding="utf-8")
    assert written.count('<article class="pick"') == len(connectors.load(COLLECTION))
    for doi in ("10.24963/ijcai.2024/527", "10.18653/v1/2024.findings-naacl.194"):
        assert f'href="https://doi.org/{doi}" rel="noopener noreferrer" target="_blank">DOI<' in written
    assert re.search(r'href="https://proceedings\.mlr\.press/[^"]+\.pdf"[^>]*>PDF<', written)
    assert 'href="https://openreview.net/forum?id=B1NGT8xCZ"' in written and ">OpenReview<" in written
    result = runner.invoke(main, ["report", "-c", str(COLLECTION), "-o", "picks.bib"])
    assert result.exit_code == 2 and "should end in .html" in result.output
    result = runner.invoke(main, ["rank", "-c", str(COLLECTION), "-o", "picks.html", "--format", "json"])
    assert result.exit_code == 2 and "contradicts" in result.output
    assert not (tmp_path / "picks.html").exists() and not (tmp_path / "picks.bib").exists()


# --- in a real browser -------------------------------------------------------------------------

def _browser():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not (chromium and driver):
        if os.environ.get("LITRANK_REQUIRE_BROWSER") == "1":
            pytest.fail("LITRANK_REQUIRE_BROWSER=1 but chromium/chromedriver are not installed")
        pytest.skip("headless Chromium not installed (apt-get install chromium chromium-driver; .ci/run does)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    # The network here is closed: Chromium's own background traffic would only log refusals.
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1280,1600"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(driver))


@pytest.fixture(scope="module")
def browser():
    driver = _browser()
    yield driver
    driver.quit()


def _load(browser, path: Path) -> None:
    browser.get(path.resolve().as_uri())
    deadline = time.monotonic() + 30
    while not browser.execute_script("return document.body.dataset.ready === 'true'"):
        assert time.monotonic() < deadline, "the page never finished drawing its map"
        time.sleep(0.1)


def test_page_loads_without_console_errors_and_draws_every_point(page, browser):
    _load(browser, page["path"])
    errors = [entry for entry in browser.get_log("browser") if entry["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    drawn = browser.execute_script("return document.querySelectorAll('#map .scatterlayer .point').length")
    assert drawn == _points(page["figure"]) == len(page["library"]) + len(page["collection"])
    labels = browser.execute_script("return document.querySelectorAll('#map .annotation').length")
    assert labels == len(page["figure"]["layout"]["annotations"])
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "report.png"))


def test_clicking_a_pick_opens_its_abstract(page, browser):
    from selenium.webdriver.common.by import By

    _load(browser, page["path"])
    pick = browser.find_element(By.ID, "pick-1")
    abstract = pick.find_element(By.CSS_SELECTOR, ".abstract")
    assert not abstract.is_displayed()
    pick.find_element(By.CSS_SELECTOR, "summary").click()
    assert abstract.is_displayed() and len(abstract.text) > 100


def test_clicking_a_numbered_point_on_the_map_opens_that_pick(page, browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    _load(browser, page["path"])
    points = browser.find_elements(By.CSS_SELECTOR, "#map .scatterlayer .trace:last-child .point")
    assert len(points) == 25
    rank = browser.execute_script("return document.getElementById('map').data.at(-1).customdata[0]")
    ActionChains(browser).move_to_element(points[0]).click().perform()
    deadline = time.monotonic() + 5
    while not browser.execute_script(f"return document.querySelector('#pick-{rank} details').open"):
        assert time.monotonic() < deadline, "clicking the point did not open its pick"
        time.sleep(0.1)


def test_filters_by_score_and_by_library_paper(page, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _load(browser, page["path"])

    def shown():
        return [int(a.get_attribute("data-rank")) for a in browser.find_elements(By.CSS_SELECTOR, "#picks .pick")
                if a.is_displayed()]

    assert len(shown()) == 25
    scores = sorted(float(a.get_attribute("data-score")) for a in browser.find_elements(By.CSS_SELECTOR, ".pick"))
    threshold = scores[len(scores) // 2]
    browser.execute_script("var s = document.getElementById('min-score'); s.value = arguments[0];"
                           "s.dispatchEvent(new Event('input'));", threshold)
    expected = sum(score >= threshold for score in scores)
    assert len(shown()) == expected < 25
    assert browser.find_element(By.ID, "shown").text == f"showing {expected} of 25 picks"
    browser.execute_script("var s = document.getElementById('min-score'); s.value = s.min;"
                           "s.dispatchEvent(new Event('input'));")
    select = Select(browser.find_element(By.ID, "source"))
    source = select.options[1].get_attribute("value")
    select.select_by_index(1)
    kept = shown()
    assert 0 < len(kept) < 25
    for rank in kept:
        sources = browser.find_element(By.ID, f"pick-{rank}").get_attribute("data-sources").split()
        assert source in sources
    # A library paper named under a pick is a shortcut to the same filter.
    select.select_by_index(0)
    link = browser.find_element(By.CSS_SELECTOR, "#pick-3 a.from")
    link.click()
    assert select.first_selected_option.get_attribute("value") == link.get_attribute("data-library")
    assert 3 in shown() and len(shown()) < 25


def test_copy_bibtex_button_copies_the_entry(page, browser):
    from selenium.webdriver.common.by import By

    _load(browser, page["path"])
    button = browser.find_element(By.CSS_SELECTOR, "#pick-2 button.copy-bibtex")
    button.click()
    deadline = time.monotonic() + 5
    while button.text == "Copy BibTeX":
        assert time.monotonic() < deadline, "the copy button never answered"
        time.sleep(0.05)
    assert button.text == "Copied"
    copied = browser.execute_script("return document.querySelector('#pick-2 textarea.bibtex').value")
    assert bibtexparser.loads(copied).entries[0]["ID"]
