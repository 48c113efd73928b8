"""The Batch API judge against a Batch API on 127.0.0.1, through the real `openai` client: scoring,
row errors, a killed run resumed, expiry, the cache and the maximum wait."""

import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import openai
import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.judging.cache import JudgeCache, cache_key
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import judge_messages, load_rubric
from llm_engineering.evaluation.judging.scoring import score_answers
from llm_engineering.infrastructure.openai_batch import BatchStillRunning, OpenAIBatchJudge
from tests.support.batch_stub import BatchPlan, BatchStub

HANDBOOK = load_rubric("handbook")
FAST_POLLS = {"batch_poll_initial_s": 0.005, "batch_poll_max_s": 0.02}


def answers(n):
    return Dataset.from_dict(
        {
            col.ID: [f"r{i}" for i in range(n)],
            col.INSTRUCTION: [f"Explain topic {i}." for i in range(n)],
            col.ANSWER: [f"Topic {i} is simple." for i in range(n)],
            col.MODEL_ID: ["m"] * n,
        }
    )


def batch_judge(base_url, state_dir, **options):
    config = JudgeConfig(
        backend="openai-batch", model="stub-judge", base_url=base_url, rubric="handbook", timeout_s=10, max_attempts=2,
        **{**FAST_POLLS, **options}
    )
    return OpenAIBatchJudge(config, Path(state_dir))


def score(base_url, workdir, rows, only_failed=False, **options):
    """Score `rows` as a run would: the batch judge, with its judge cache and batch state under `workdir`."""
    cache = JudgeCache(Path(workdir) / "cache")
    try:
        judge = batch_judge(base_url, Path(workdir) / "batches", **options)
        return score_answers(rows, Judge((judge,), HANDBOOK, cache), only_failed=only_failed)
    finally:
        cache.close()


def states(workdir):
    return [json.loads(path.read_text()) for path in sorted((Path(workdir) / "batches").glob("*.json"))]


@pytest.fixture
def stub():
    with BatchStub() as server:
        yield server


@pytest.mark.timeout(60)
def test_a_batch_scores_every_row_in_one_batch_and_shows_its_status(stub, tmp_path, caplog):
    stub.state.default = BatchPlan(validating_polls=2, in_progress_polls=3)
    with caplog.at_level(logging.INFO, logger="llm_engineering.infrastructure.openai_batch"):
        evaluations = score(stub.base_url, tmp_path, answers(6))

    assert (stub.state.batches_created, stub.state.uploads, stub.state.requests_received) == (1, 1, 6)
    assert evaluations[col.JUDGE_ERROR] == [None] * 6
    assert evaluations[col.score("accuracy")] == [3] * 6 and evaluations[col.score("style")] == [2] * 6
    assert evaluations[col.JUDGE_PROMPT_TOKENS] == [100] * 6 and evaluations[col.JUDGE_COMPLETION_TOKENS] == [20] * 6
    # The batch's logprobs reached the rows: the stub's judge put 0.2 on the value below each score.
    assert all(2 < expected < 3 for expected in evaluations[col.expected("accuracy")])
    assert all(1 < expected < 2 for expected in evaluations[col.expected("style")])
    shown = "\n".join(record.getMessage() for record in caplog.records)
    for status in ("validating (0/6 done", "in_progress (", "finalizing (6/6 done", "completed (6/6 done, 0 failed)"):
        assert f"batch_1: {status}" in shown
    # One chat request per line, each named by its cache key, asking for the schema and logprobs.
    requests = stub.state.batches["batch_1"].requests
    namespace = batch_judge(stub.base_url, tmp_path).cache_namespace(None)
    rows = answers(6)
    assert [r["custom_id"] for r in requests] == [
        cache_key(namespace, judge_messages(HANDBOOK, row[col.INSTRUCTION], row[col.ANSWER], None)) for row in rows
    ]
    assert {(r["method"], r["url"]) for r in requests} == {("POST", "/v1/chat/completions")}
    assert {r["body"]["response_format"]["type"] for r in requests} == {"json_schema"}
    assert all(r["body"]["logprobs"] is True for r in requests)
    assert [(s["batch_id"], s["requests"], s["done"]) for s in states(tmp_path)] == [("batch_1", 6, True)]


@pytest.mark.timeout(60)
def test_errored_requests_become_row_errors_and_only_failed_sends_only_those(stub, tmp_path):
    stub.state.plans = [BatchPlan(errored=2)]
    first = score(stub.base_url, tmp_path, answers(5))
    assert [error is not None for error in first[col.JUDGE_ERROR]] == [True, True, False, False, False]
    assert all(error.startswith("batch batch_1: HTTP 500") for error in first[col.JUDGE_ERROR][:2])
    assert first[col.score("accuracy")] == [None, None, 3, 3, 3]

    merged = score(stub.base_url, tmp_path, first, only_failed=True)
    assert (stub.state.batches_created, stub.state.requests_received) == (2, 5 + 2)
    assert stub.state.batches["batch_2"].custom_ids == stub.state.batches["batch_1"].custom_ids[:2]
    assert merged[col.JUDGE_ERROR] == [None] * 5 and merged[col.score("accuracy")] == [3] * 5


# The first attempt of a run, in a process of its own so that it can be killed for real.
FIRST_ATTEMPT = """
import sys
from tests.integration.test_openai_batch import answers, score
score(sys.argv[1], sys.argv[2], answers(int(sys.argv[3])))
"""


@pytest.mark.slow  # a process of its own, killed
@pytest.mark.timeout(300)
def test_a_run_killed_while_its_batch_runs_resumes_that_batch_when_run_again(stub, tmp_path, repo_root):
    stub.state.default = BatchPlan(hold=True)
    first = subprocess.Popen(
        [sys.executable, "-c", FIRST_ATTEMPT, stub.base_url, str(tmp_path), "4"],
        cwd=repo_root,
        env={**os.environ, "PYTHONPATH": str(repo_root)},
    )
    try:
        deadline = time.monotonic() + 240
        # Killed once the batch is in progress and has been polled there a few times.
        while not (stub.state.batches and stub.state.batches["batch_1"].polls >= 4):
            assert first.poll() is None, "the first attempt ended before it was killed"
            assert time.monotonic() < deadline, "the first attempt never submitted its batch"
            time.sleep(0.02)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert first.returncode == -signal.SIGKILL
    assert [(s["batch_id"], s["done"]) for s in states(tmp_path)] == [("batch_1", False)]

    stub.state.release()
    evaluations = score(stub.base_url, tmp_path, answers(4))
    assert (stub.state.batches_created, stub.state.uploads, stub.state.requests_received) == (1, 1, 4)
    assert evaluations[col.JUDGE_ERROR] == [None] * 4 and evaluations[col.score("accuracy")] == [3] * 4
    assert [(s["batch_id"], s["done"]) for s in states(tmp_path)] == [("batch_1", True)]


@pytest.mark.timeout(60)
def test_an_expired_batch_keeps_its_answers_and_a_rerun_submits_only_the_rest(stub, tmp_path):
    stub.state.plans = [BatchPlan(expire_after=3)]
    first = score(stub.base_url, tmp_path, answers(5))
    assert first[col.JUDGE_ERROR][:3] == [None] * 3 and first[col.score("accuracy")][:3] == [3] * 3
    assert all("batch_1: batch_expired" in error for error in first[col.JUDGE_ERROR][3:])

    again = score(stub.base_url, tmp_path, answers(5))  # the same command again
    assert (stub.state.batches_created, stub.state.requests_received) == (2, 5 + 2)
    assert stub.state.batches["batch_2"].custom_ids == stub.state.batches["batch_1"].custom_ids[3:]
    assert again[col.JUDGE_ERROR] == [None] * 5
    assert again[col.JUDGE_CACHED] == [True] * 3 + [False] * 2


@pytest.mark.timeout(60)
def test_verdicts_in_the_cache_submit_no_batch_and_upload_nothing(stub, tmp_path):
    first = score(stub.base_url, tmp_path, answers(4))
    assert (stub.state.batches_created, stub.state.uploads) == (1, 1)

    again = score(stub.base_url, tmp_path, answers(4))  # --rescore after a finished batch
    assert (stub.state.batches_created, stub.state.uploads, stub.state.requests_received) == (1, 1, 4)
    assert again[col.JUDGE_CACHED] == [True] * 4
    assert again[col.score("accuracy")] == first[col.score("accuracy")]


@pytest.mark.timeout(60)
def test_past_its_max_wait_a_run_fails_naming_the_batch_and_a_rerun_resumes_it(stub, tmp_path):
    stub.state.default = BatchPlan(hold=True)
    started = time.monotonic()
    with pytest.raises(BatchStillRunning) as raised:
        score(stub.base_url, tmp_path, answers(3), batch_max_wait_s=0.3)
    assert time.monotonic() - started < 10
    message = str(raised.value)
    # The status as last polled: the held batch is still validating or already in progress when the wait ends.
    assert re.match(r"Judge batch batch_1 has not ended after 0.3 s \(judge.batch.max_wait_s; batch_1: "
                    r"(validating|in_progress), [0-3]/3 done", message), message
    assert "rerun the same command to resume waiting for it" in message and str(tmp_path / "batches") in message

    stub.state.release()
    evaluations = score(stub.base_url, tmp_path, answers(3))
    assert (stub.state.batches_created, stub.state.requests_received) == (1, 3)
    assert evaluations[col.JUDGE_ERROR] == [None] * 3


@pytest.mark.timeout(60)
def test_a_wait_cut_off_from_the_api_names_the_batch_and_a_rerun_resumes_it(stub, tmp_path):
    stub.state.default = BatchPlan(hold=True)

    def cut_off_once_in_progress():
        while not (stub.state.batches and stub.state.batches["batch_1"].polls >= 3):
            time.sleep(0.005)
        stub.state.down = True

    cutter = threading.Thread(target=cut_off_once_in_progress)
    cutter.start()
    with pytest.raises(BatchStillRunning) as raised:
        score(stub.base_url, tmp_path, answers(3))
    cutter.join()
    assert str(raised.value).startswith("Judge batch batch_1 could not be polled (connection error: ")
    assert "rerun the same command to resume waiting for it" in str(raised.value)

    stub.state.down = False  # the API is back
    stub.state.release()
    evaluations = score(stub.base_url, tmp_path, answers(3))
    assert (stub.state.batches_created, stub.state.requests_received) == (1, 3)
    assert evaluations[col.JUDGE_ERROR] == [None] * 3


def _cancel_once_submitted(base_url, state):
    deadline = time.monotonic() + 30
    while "batch_1" not in state.batches and time.monotonic() < deadline:
        time.sleep(0.005)
    openai.OpenAI(base_url=base_url, api_key="test-key").batches.cancel("batch_1")  # as from OpenAI's dashboard


@pytest.mark.timeout(60)
@pytest.mark.parametrize("ending", ["failed", "cancelled"])
def test_a_batch_that_ran_nothing_fails_its_rows_and_a_rerun_submits_a_new_one(stub, tmp_path, ending):
    stub.state.plans = [BatchPlan(fail_validation=True) if ending == "failed" else BatchPlan(hold=True)]
    canceller = threading.Thread(target=_cancel_once_submitted, args=(stub.base_url, stub.state))
    if ending == "cancelled":
        canceller.start()
    first = score(stub.base_url, tmp_path, answers(3))
    reason = (
        "batch batch_1 failed: invalid_request: The batch input file is not valid."
        if ending == "failed"
        else "batch batch_1 cancelled without running this request"
    )
    assert first[col.JUDGE_ERROR] == [reason] * 3

    # The same requests again (none was answered): the ended batch is not waited for again.
    again = score(stub.base_url, tmp_path, answers(3))
    assert (stub.state.batches_created, stub.state.requests_received) == (2, 6)
    assert again[col.JUDGE_ERROR] == [None] * 3
    assert [(s["batch_id"], s["done"], s["status"]) for s in states(tmp_path)] == [("batch_2", True, "completed")]


@pytest.mark.timeout(60)
def test_an_endpoint_refusing_json_schema_gets_json_mode_in_a_second_batch(stub, tmp_path):
    stub.state.default = BatchPlan(reject_json_schema=True)
    evaluations = score(stub.base_url, tmp_path, answers(3))
    assert evaluations[col.JUDGE_ERROR] == [None] * 3
    formats = [[r["body"]["response_format"]["type"] for r in b.requests] for b in stub.state.batches.values()]
    assert formats == [["json_schema"] * 3, ["json_object"] * 3]


@pytest.mark.timeout(60)
def test_identical_prompts_are_one_request_answered_on_each_row(stub, tmp_path):
    rows = Dataset.from_dict({**answers(3).to_dict(), col.INSTRUCTION: ["Same?"] * 3, col.ANSWER: ["Same.", "Same.", "No."]})
    evaluations = score(stub.base_url, tmp_path, rows)
    assert stub.state.requests_received == 2
    assert evaluations[col.JUDGE_ERROR] == [None] * 3 and evaluations[col.score("accuracy")] == [3] * 3


@pytest.mark.slow  # a pipeline run
@pytest.mark.timeout(300)
def test_in_a_rescoring_run_each_batch_is_recorded_as_step_metadata(stub):
    from zenml import save_artifact
    from zenml.client import Client

    from llm_engineering.evaluation.stored.generation import GenerationStats
    from llm_engineering.run_config import EvaluationConfig
    from pipelines.evaluating import rescoring
    from steps.materializers import DatasetMaterializer

    stored = save_artifact(answers(3), name="batch-judge-answers", materializer=DatasetMaterializer)
    config = EvaluationConfig.model_validate(
        {
            "judge": {"backend": "openai-batch", "model": "stub-judge", "base_url": stub.base_url, **FAST_POLLS},
            "judge_check": {"rows": 0},
            "similarity": {"enabled": False},
        }
    )
    stats = GenerationStats(
        model_id="m",
        rows=3,
        skipped=0,
        prompt_tokens=0,
        completion_tokens=0,
        seconds=1.0,
        tokens_per_second=0.0,
        prompts_per_second=0.0,
    )
    run = rescoring.with_options(enable_cache=False)(config=config, generation_stats=[stats], answers_ids=[str(stored.id)])

    step = Client().get_pipeline_run(run.id).steps["evaluate_answers"]
    recorded = step.run_metadata["judge_batch batch_1"]
    assert (recorded["requests"], recorded["resumed"]) == (3, False)
    assert Path(recorded["state_file"]).name == recorded["request_file_sha256"] + ".json"
    assert step.outputs[col.EVALUATIONS][0].load()[col.JUDGE_ERROR] == [None] * 3
    # The default rubric's verdicts came with logprobs, so their scores were asked again before the analysis (its
    # expected scores): a second batch, recorded as the first.
    assert stub.state.batches_created == 2
    batches = sorted(key for key in step.run_metadata if key.startswith("judge_batch "))
    assert len(batches) == 2 and all(step.run_metadata[key]["requests"] == 3 for key in batches)
