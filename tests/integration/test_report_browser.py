"""The standalone HTML report's row browser in real headless Chromium (Debian's, driven by Playwright):
the report the CLI writes for two models' scored rows with known scores and failures, sorted by a score,
filtered to failed rows and by model, searched; the rows left visible are asserted; screenshots kept. Then
labelling in it: keys and clicks, a reload, the downloaded files read back by the `--labels` loader."""

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary
from llm_engineering.evaluation.trust.labels import load_labels
from llm_engineering.run_report import write_reports
from tests.support.browser import download_all, report_page

pytestmark = pytest.mark.slow  # a real browser for each test

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
# id -> the judge's confidence in base's, tuned's verdict (None: none); each row's least sure: f, c, d, b, e, a.
CONFIDENCE = {"a": (0.9, 0.99), "b": (0.5, 0.6), "c": (0.3, None), "d": (None, 0.4), "e": (0.8, 0.7), "f": (0.95, 0.2)}
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
        col.CONFIDENCE: [CONFIDENCE[i][index] for i in ids],
        col.ESCALATED: [i == "f" and index == 1 for i in ids],
    })


@pytest.fixture
def page(tmp_path):
    summary = build_summary(SummaryInputs([_evaluations("base", 0), _evaluations("tuned", 1)], run="browser-test"))
    _, html_path = write_reports(summary, "browser-test", tmp_path)
    with report_page(html_path) as tab:
        yield tab


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


def test_labelling_by_keys_and_clicks_survives_a_reload_and_downloads_files_the_labels_loader_reads(page, tmp_path):
    # Keys work at once: the first row (c, worst first) has the focus, its first target is base's accuracy.
    assert page.evaluate("document.activeElement.dataset.id") == "c"
    for key in "32":  # base: accuracy 3, style 2
        page.keyboard.press(key)
    page.keyboard.press("9")  # off the 1-3 scale: ignored, tuned's accuracy stays the target
    for key in "11":  # tuned: accuracy 1, style 1
        page.keyboard.press(key)
    page.keyboard.press("a")  # the pair: base's answer (A) is better; the row is done, the next one (d) is current
    assert page.evaluate("document.activeElement.dataset.id") == "d"
    page.keyboard.press("2")  # d: base accuracy 2 ...
    page.keyboard.press("u")  # ... undone
    page.keyboard.press("j")  # skip d; e is current
    page.keyboard.press("3")  # e: base accuracy 3
    assert page.inner_text("#label-count") == "2 of 6 rows labelled (6 labels)"
    # A click labels any answer: tuned's style on row a, and a tie on row b.
    row_a = page.locator("#rows tbody tr[data-id='a']")
    row_a.locator("td[data-model='tuned'] .label-set", has_text="your style").get_by_role("button", name="2").click()
    page.locator("#rows tbody tr[data-id='b']").get_by_role("button", name="tie").click()
    assert page.inner_text("#label-count") == "4 of 6 rows labelled (8 labels)"

    page.reload()
    assert page.inner_text("#label-count") == "4 of 6 rows labelled (8 labels)"
    assert page.locator("#rows tbody tr[data-id='a'] td[data-model='tuned'] button.on").inner_text() == "2"

    scores, pairs = download_all(page, 2, tmp_path)
    assert (scores.name, pairs.name) == ("labels-browser-test.jsonl", "pairwise-labels-browser-test.jsonl")
    pointwise = load_labels(scores)
    assert (pointwise.kind, pointwise.run, pointwise.rubric) == ("pointwise", "browser-test", "handbook")
    # Rows labelled in the report's own order, not a random one: the corrected means' intervals would not hold.
    assert {r.chosen for r in pointwise.rows} == {"by-hand"}
    assert sorted((r.id, r.answer, r.criterion, r.score) for r in pointwise.rows) == [
        ("a", "tuned says a.", "style", 2),
        ("c", "base says c.", "accuracy", 3), ("c", "base says c.", "style", 2),
        ("c", "tuned says c.", "accuracy", 1), ("c", "tuned says c.", "style", 1),
        ("e", "base says e.", "accuracy", 3),
    ]
    pairwise = load_labels(pairs)
    assert sorted((r.id, r.answer_a, r.answer_b, r.preferred) for r in pairwise.rows) == [
        ("b", "base says b.", "tuned says b.", "tie"), ("c", "base says c.", "tuned says c.", "A")]


def test_label_at_random_shuffles_the_unlabelled_rows_says_what_needs_it_and_records_the_order(page, tmp_path):
    orders = set()
    for _ in range(6):  # 720 orders of the six rows: six the same would be one chance in 720 ** 5
        page.click("#label-random")
        orders.add(tuple(_visible_ids(page)))
    assert len(orders) > 1 and all(sorted(order) == ["a", "b", "c", "d", "e", "f"] for order in orders)
    assert page.inner_text("#label-order").startswith("Order: at random: the 6 unlabelled rows shuffled")
    assert "corrected means (PPI++) hold for labels of a random sample" in page.inner_text("#label-order")
    # Each label records the order its row was taken in: the first row of the random order, then of 'Label next'.
    first = _visible_ids(page)[0]
    page.keyboard.press("3")
    page.click("#label-next")
    second = page.evaluate("document.activeElement.dataset.id")
    page.keyboard.press("2")
    (scores,) = download_all(page, 1, tmp_path)
    assert sorted((r.id, r.chosen) for r in load_labels(scores).rows) == sorted([(first, "random"), (second, "label-next")])


def test_label_next_proposes_unlabelled_rows_spread_over_the_judges_scores(page):
    page.click("#label-next")
    # Worst totals: c, d -1 (failed), e 2, b 4, f 5, a 6: each level in turn, then the next row of a level.
    assert _visible_ids(page) == ["c", "e", "b", "f", "a", "d"]
    assert page.inner_text("#label-order").startswith("Order: label next: the 6 unlabelled rows")
    assert page.evaluate("document.activeElement.dataset.id") == "c"


def test_least_sure_first_puts_the_rows_of_the_judges_least_sure_verdicts_first(page, tmp_path):
    row_f = page.locator("#rows tbody tr[data-id='f']")
    assert "the judge's confidence 0.20; judged again by the second judge" in row_f.inner_text()
    page.click("#label-unsure")
    assert _visible_ids(page) == ["f", "c", "d", "b", "e", "a"]
    assert page.inner_text("#label-order").startswith("Order: least sure first: the 6 unlabelled rows with a confidence")
    page.keyboard.press("1")  # f, the least sure: its label says how its row was chosen
    (scores,) = download_all(page, 1, tmp_path)
    assert [(r.id, r.chosen) for r in load_labels(scores).rows] == [("f", "least-sure")]


# id -> (instruction, reference, answer, the judge's accuracy): texts an HTML parser would read as markup inside the
# labelling data's <script> element ("<!--<script" keeps it open past "</script>", swallowing the page after it).
MARKUP = {
    "m1": ("Why does <!--<script break a page?", "Because </script> ends the element, and <!-- a comment.",
           "<!--<script>document.title = 'swallowed'</script> & <b>more</b>", 1),
    "m2": ("A plain question?", "A plain reference </script>", "A plain answer.", 3),
}


def test_labelling_data_holding_script_markup_stays_data_and_the_next_row_is_labelled(tmp_path):
    ids = list(MARKUP)
    evaluations = Dataset.from_dict({
        col.ID: ids, col.INSTRUCTION: [MARKUP[i][0] for i in ids], col.REFERENCE: [MARKUP[i][1] for i in ids],
        col.ANSWER: [MARKUP[i][2] for i in ids], col.MODEL_ID: ["base"] * 2,
        col.score("accuracy"): [MARKUP[i][3] for i in ids], col.score("style"): [2, 2],
        col.analysis("accuracy"): ["-", "-"], col.analysis("style"): ["-", "-"], col.JUDGE_ERROR: [None, None],
        col.JUDGE_MODEL: ["judge"] * 2, col.COMPLETION_TOKENS: [8, 8], col.FINISH_REASON: ["stop", "stop"],
    })
    _, html_path = write_reports(build_summary(SummaryInputs([evaluations], run="markup-test")), "markup-test", tmp_path)
    with report_page(html_path) as page:
        # The labelling script ran (its counter is there), no script of the data did, and the rows read as written.
        assert page.inner_text("#label-count") == "0 of 2 rows labelled (0 labels)"
        assert page.title() == "Evaluation summary"
        assert MARKUP["m1"][2] in page.locator("#rows tbody tr[data-id='m1']").inner_text()
        for key in "1232":  # m1 (worst first, focused): accuracy 1, style 2; then the next row, m2: 3, 2
            page.keyboard.press(key)
        assert page.inner_text("#label-count") == "2 of 2 rows labelled (4 labels)"
        page.screenshot(path=str(tmp_path / "labelled-markup.png"), full_page=True)
        (scores,) = download_all(page, 1, tmp_path)
    assert sorted((r.id, r.answer, r.criterion, r.score) for r in load_labels(scores).rows) == [
        ("m1", MARKUP["m1"][2], "accuracy", 1), ("m1", MARKUP["m1"][2], "style", 2),
        ("m2", MARKUP["m2"][2], "accuracy", 3), ("m2", MARKUP["m2"][2], "style", 2)]
