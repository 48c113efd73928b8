"""The standalone HTML report's row browser in real headless Chromium (Debian's, driven by Playwright):
the report the CLI writes for two models' scored rows with known scores and failures, sorted by a score,
filtered to failed rows and by model, searched; the rows left visible are asserted; screenshots kept."""

import os
import shutil

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.report.summary import build_summary
from llm_engineering.run_report import write_reports

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FAILED = None
# id -> (base's accuracy, style), (tuned's accuracy, style); FAILED: no valid verdict.
SCORES = {
    "a": ((3, 3), (3, 3)),
    "b": ((2, 2), (3, 3)),
    "c": ((1, 1), FAILED),
    "d": (FAILED, (2, 2)),
    "e": ((3, 2), (1, 1)),
    "f": ((2, 3), (3, 3)),
}
LONG = "Kubernetes " + "orchestrates containers across machines. " * 20


def _evaluations(model, index):
    ids = list(SCORES)
    scores = [SCORES[i][index] for i in ids]
    return Dataset.from_dict({
        col.ID: ids,
        col.INSTRUCTION: [LONG if i == "e" else f"Question {i}?" for i in ids],
        col.REFERENCE: [f"Reference {i}." for i in ids],
        col.MODEL_ID: [model] * len(ids),
        col.ANSWER: [f"{model} says {i}." for i in ids],
        col.score("accuracy"): [s[0] if s else None for s in scores],
        col.score("style"): [s[1] if s else None for s in scores],
        col.analysis("accuracy"): [f"{model} accuracy analysis of {i}" for i in ids],
        col.analysis("style"): ["-"] * len(ids),
        col.JUDGE_ERROR: [None if s else "no JSON in the reply" for s in scores],
        col.JUDGE_MODEL: ["judge"] * len(ids),
        col.COMPLETION_TOKENS: [8] * len(ids),
        col.FINISH_REASON: ["stop"] * len(ids),
    })


@pytest.fixture
def page(tmp_path):
    if CHROMIUM is None and os.environ.get("CI"):
        pytest.fail("Chromium is not installed, and on CI the report must be tested: `make browser` installs it")
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed: `make browser` installs Debian's chromium (needs root and apt)")
    from playwright.sync_api import sync_playwright

    summary = build_summary([_evaluations("base", 0), _evaluations("tuned", 1)])
    _, html_path = write_reports(summary, "browser-test", tmp_path)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            # Offline: a report that fetched anything (a CDN script, a font) would fail here.
            context = browser.new_context(viewport={"width": 1500, "height": 900}, offline=True)
            tab = context.new_page()
            tab.goto(html_path.as_uri())
            yield tab
        finally:
            browser.close()


def _visible_ids(page):
    return page.eval_on_selector_all("#rows tbody tr:not([hidden])", "rows => rows.map(r => r.cells[0].textContent)")


def test_row_browser_sorts_filters_and_collapses_long_texts_in_a_real_browser(page, tmp_path):
    # Worst first: rows with a failed answer, then by the lowest total score over the models.
    assert _visible_ids(page) == ["c", "d", "e", "b", "f", "a"]
    assert page.inner_text("#shown-count") == "6 of 6 items shown"
    page.screenshot(path=str(tmp_path / "row-browser.png"), full_page=True)

    # Sort by tuned's accuracy: ascending (its failed row first), then descending on a second click.
    header = page.locator("#rows th", has_text="tuned: accuracy")
    header.click()
    assert _visible_ids(page) == ["c", "e", "d", "b", "f", "a"]
    header.click()
    assert _visible_ids(page) == ["b", "f", "a", "d", "e", "c"]

    # Failed only: the items where some shown model has no valid verdict; by model: that model's failures.
    page.check("#failed-only")
    assert sorted(_visible_ids(page)) == ["c", "d"]
    page.select_option("#model-filter", "base")
    assert _visible_ids(page) == ["d"]
    assert page.locator("#rows th", has_text="tuned: accuracy").is_hidden()
    page.select_option("#model-filter", "tuned")
    assert _visible_ids(page) == ["c"]
    assert page.inner_text("#shown-count") == "1 of 6 items shown"

    # Text search over every cell, with all models and rows again.
    page.uncheck("#failed-only")
    page.select_option("#model-filter", "")
    page.fill("#row-search", "kubernetes")
    assert _visible_ids(page) == ["e"]

    # A long text is collapsed behind its first words until opened; analyses are one click away.
    row = page.locator("#rows tbody tr", has_text="Reference e.")
    assert LONG.strip() not in row.inner_text()
    row.locator("details summary").first.click()
    assert LONG.strip() in row.inner_text()
    assert "tuned accuracy analysis of e" not in row.inner_text()
    row.locator("summary", has_text="accuracy analysis").last.click()
    assert "tuned accuracy analysis of e" in row.inner_text()
    page.screenshot(path=str(tmp_path / "row-browser-filtered.png"), full_page=True)
    assert (tmp_path / "row-browser-filtered.png").stat().st_size > 10_000
