"""Labels from a person, end to end: a stored run's report labelled in real headless Chromium by keys and clicks,
reloaded, downloaded, and given to `rescore --labels`. The session's engine generates six answers; the
OpenAI-compatible stub judges them with verdicts known per row, so the agreement the labels make is certain."""

import pytest

from llm_engineering.evaluation.config import DatasetConfig
from llm_engineering.evaluation.generation.dataset import read_test_split
from llm_engineering.evaluation.trust.labels import load_labels
from tests.support.browser import download_all, report_page
from tests.support.cli_output import json_report, report_path, reported_run
from tests.support.configs import stub_judged
from tests.support.openai_stub import VERDICT, OpenAIStub

ROWS = 6
LOW = {"accuracy": {"analysis": "Wrong.", "score": 1}, "style": VERDICT["style"]}  # the judge's verdict on two rows
# What the person gives each row's accuracy, by the judge's accuracy there (1 on two rows, 3 on four): one of the
# two low rows agreed, the other 3 (two off); of the four high rows, three agreed and one 2 (one off). Style: the
# judge's 2 everywhere. So exact agreement on accuracy is 4 of 6, within one 5 of 6; on style 6 of 6.
PERSON = {1: [1, 3], 3: [3, 3, 3, 2]}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_rows_labelled_in_the_report_give_rescore_the_agreement_they_make_certain(run_cli, tmp_path):
    low_rows = [row["instruction"] for row in list(read_test_split(DatasetConfig(limit=ROWS)))[:2]]
    with OpenAIStub() as judge:
        judge.state.verdict_when = [(instruction, LOW) for instruction in low_rows]
        config = stub_judged(tmp_path / "run.yaml", judge.base_url, rows=ROWS, max_tokens=16)
        result = run_cli("evaluate", "--config", config)
        assert result.exit_code == 0, result.output[-3000:]
        run = json_report(result.stdout)["run"]
        html_path = report_path(result.stdout, "HTML")

        given = {1: iter(PERSON[1]), 3: iter(PERSON[3])}
        with report_page(html_path) as page:
            order = page.eval_on_selector_all("#rows tbody tr", "rows => rows.map(r => [r.dataset.id, r.cells[5].dataset.value])")
            judged = [int(float(score)) for _, score in order]  # the judge's accuracy on each row, worst first
            assert sorted(judged) == [1, 1, 3, 3, 3, 3]
            labels = [next(given[score]) for score in judged]
            # Four rows by keys (the first row has the focus when the page opens), two by clicks.
            for accuracy in labels[:4]:
                page.keyboard.press(str(accuracy))
                page.keyboard.press("2")
            for (row_id, _), accuracy in zip(order[4:], labels[4:]):
                row = page.locator(f"#rows tbody tr[data-id='{row_id}']")
                row.locator(".label-set", has_text="your accuracy").get_by_role("button", name=str(accuracy)).click()
                row.locator(".label-set", has_text="your style").get_by_role("button", name="2").click()
            assert page.inner_text("#label-count") == "6 of 6 rows labelled (12 labels)"
            page.reload()
            assert page.inner_text("#label-count") == "6 of 6 rows labelled (12 labels)"
            (labels_file,) = download_all(page, 1, tmp_path)
            page.screenshot(path=str(tmp_path / "labelled.png"), full_page=True)

        loaded = load_labels(labels_file)
        assert (loaded.kind, loaded.run, loaded.rubric, len(loaded.rows)) == ("pointwise", run, "task-accuracy", 12)

        # A rubric other than the labels' is refused before any judge starts, naming both and the fix.
        result = run_cli("rescore", "--config", config, "--labels", labels_file, "--rubric", "handbook")
        assert result.exit_code != 0
        assert "written for rubric 'task-accuracy', but the judge scores with 'handbook'" in result.output
        assert "--rubric task-accuracy" in result.output

        result = run_cli("rescore", "--config", config, "--labels", labels_file)
        _, report = reported_run(result)
        assert f"Re-scoring 1 stored artifact(s) of run {run}" in result.stdout
    agreement = report["labels"]
    accuracy, style = agreement["criteria"]
    assert (accuracy["criterion"], accuracy["rows"], accuracy["judge"]["exact"], accuracy["judge"]["within_one"]) == (
        "accuracy", 6, 0.6667, 0.8333)
    assert (style["criterion"], style["judge"]["exact"]) == ("style", 1.0)
    assert "  accuracy (6 labels): " in result.stdout
    assert "    judge: exact 67%" in result.stdout and "within one 83%" in result.stdout
    assert "written on the report of run" not in result.stdout  # the labels name the run that was rescored
