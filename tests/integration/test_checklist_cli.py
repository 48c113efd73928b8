"""A checklist rubric end to end on the real engine (SmolLM2 grading, the session's engine): the rows' items written
once into the `checklists` artifact, each answer graded item by item with each item's Yes and No mass kept, an item
under the floor unread (SmolLM2 begins its replies with other words: its items are unread, its rows unscored and
counted so), and a rescore that reuses the stored checklists without writing them again."""

import pytest
import yaml

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.checklist import MAX_UNREAD_SHARE, YES_NO_FLOOR
from tests.support.cli_output import reported_run
from tests.support.small_run import ROWS

pytestmark = pytest.mark.slow


def test_a_checklist_rubric_writes_the_items_once_and_a_rescore_grades_on_the_stored_ones(run_cli, tmp_path):
    config = tmp_path / "checklist.yaml"
    config.write_text(yaml.safe_dump({"parameters": {
        "dataset": {"limit": ROWS}, "sampling": {"max_tokens": 16},
        "judge": {"model": "smollm2-135m", "rubric": "reference-checklist", "cache": False},
        "judge_check": {"rows": 0}, "similarity": {"enabled": False}, "pairwise": {"enabled": False}}}))
    result = run_cli("evaluate", "--config", config)
    # Exit 4 where no row of the model has a verdict (asserted below from the rows scored).
    run, report = reported_run(result, exit_code=4 if result.exit_code == 4 else 0)
    (written,) = run.steps["write_checklists"].outputs[col.CHECKLISTS]
    checklists = written.load()
    assert len(checklists) == ROWS and all(checklists[col.CHECKLIST])
    assert set(checklists["source"]) == {"reference sentences"}  # the embedded split's rows all have references
    evaluations = run.steps["evaluate_answers"].outputs[col.EVALUATIONS][0].load()
    unread, scored = 0, 0
    for row, items in zip(evaluations, checklists[col.CHECKLIST]):
        graded = row[col.checklist_items("accuracy")]
        assert [i["item"] for i in graded] == items  # graded on its own row's items
        assert row[col.JUDGE_CALLS] == len(items) + 1  # an item each, and the style's scores
        assert row[col.CHECKLIST_SOURCE] == "reference sentences"
        # Every item keeps the mass Yes and No held; it is read where that is at least the floor, else unread.
        assert all((i["yes"] is None) == (i["mass"] < YES_NO_FLOOR) for i in graded)
        missed = sum(i["yes"] is None for i in graded)
        unread += missed
        if missed > MAX_UNREAD_SHARE * len(graded):
            assert row[col.score("accuracy")] is None and "checklist items unread" in row[col.JUDGE_ERROR]
        else:
            scored += 1
            assert 1 <= row[col.expected("accuracy")] <= 3 and "checklist items stated" in row[col.analysis("accuracy")]
    # The run fails (exit 4, answers kept) exactly when no row was scored, and says how to judge them again.
    assert result.exit_code == (0 if scored else 4)
    assert ("rescore --only-failed" in result.output) == (scored == 0)
    assert report["checklist"] == "accuracy" and "checklist " in result.stdout  # the table leads with its score
    figures = report["models"][0]["checklist"]
    assert figures["unread"] == unread and figures["items"] == sum(len(items) for items in checklists[col.CHECKLIST])
    said = " ".join(result.stdout.split())  # the console wraps long lines
    assert (f"{unread} of {figures['items']} items unread" in said) == (unread > 0)

    rescored = run_cli("rescore", "--config", config)
    again, _ = reported_run(rescored, exit_code=result.exit_code)
    assert f"Re-scoring 1 stored artifact(s) of run {run.name}" in rescored.stdout
    assert "write_checklists" not in again.steps  # not written again
    (used,) = again.steps["evaluate_answers"].inputs["checklists"]
    assert used.id == written.id
