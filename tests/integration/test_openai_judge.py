"""The OpenAI-compatible judge against real HTTP on 127.0.0.1, through the real `openai` client."""

from types import SimpleNamespace

import pytest
import tenacity
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeCheckConfig, JudgeConfig
from llm_engineering.evaluation.judging.cache import JudgeCache
from llm_engineering.evaluation.judging.failures import failure_cause
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.judging.scoring import score_answers
from llm_engineering.infrastructure.openai_judge import OpenAIJudge
from tests.support.openai_stub import OpenAIStub

HANDBOOK = load_rubric("handbook")


def answers(n):
    return Dataset.from_dict({
        col.ID: [f"r{i}" for i in range(n)], col.INSTRUCTION: [f"Explain topic {i}." for i in range(n)],
        col.ANSWER: [f"Topic {i} is simple." for i in range(n)], col.MODEL_ID: ["m"] * n,
    })


@pytest.fixture
def stub():
    with OpenAIStub() as server:
        yield server


def judge(stub, **options):
    config = JudgeConfig(backend="openai", model="stub-judge", base_url=stub.base_url, rubric="handbook",
                         **{"max_backoff_s": 5, "timeout_s": 10, **options})
    return OpenAIJudge(config)


def test_429_with_retry_after_twice_then_success_stores_the_verdict(stub):
    stub.state.script = [("429", 1), ("429", 1), "ok"]
    evaluations = score_answers(answers(1), Judge((judge(stub, max_concurrency=1),), HANDBOOK))
    assert evaluations[0][col.JUDGE_ERROR] is None
    assert (evaluations[0][col.score("accuracy")], evaluations[0][col.score("style")]) == (3, 2)
    times = [r["time"] for r in stub.state.requests]
    assert len(times) == 3
    # The client waited as told by Retry-After between tries (observed by the server).
    assert all(later - earlier >= 0.9 for earlier, later in zip(times, times[1:]))


def test_5xx_is_retried_and_persistent_failure_becomes_a_row_error(stub):
    stub.state.script = ["500", "ok"]
    first = score_answers(answers(1), Judge((judge(stub, max_concurrency=1),), HANDBOOK))
    assert first[0][col.JUDGE_ERROR] is None and len(stub.state.requests) == 2

    stub.state.default = "500"
    failed = score_answers(answers(2), Judge((judge(stub, max_attempts=3),), HANDBOOK))
    assert failed[col.score("accuracy")] == [None, None]
    assert all("HTTP 500" in error and "3 attempt" in error for error in failed[col.JUDGE_ERROR])
    assert len(stub.state.requests) == 2 + 2 * 3


def test_dropped_connections_fail_rows_then_only_failed_fills_exactly_those(stub, tmp_path):
    cache = JudgeCache(tmp_path / "cache")
    # Rows 0-2 answered, then the server drops every connection for the rest of the run.
    stub.state.script = ["ok", "ok", "ok"]
    stub.state.default = "drop"
    first = score_answers(answers(6), Judge((judge(stub, max_concurrency=1, max_attempts=2),), HANDBOOK, cache))
    failed = [i for i, error in enumerate(first[col.JUDGE_ERROR]) if error is not None]
    assert failed == [3, 4, 5]
    assert all(failure_cause(first[i][col.JUDGE_ERROR]) == "connection error" for i in failed)

    stub.state.default, stub.state.requests = "ok", []
    merged = score_answers(first, Judge((judge(stub),), HANDBOOK, cache), only_failed=True)
    assert len(stub.state.requests) == 3  # exactly the failed rows
    assert merged[col.JUDGE_ERROR] == [None] * 6
    assert merged[col.ID] == first[col.ID]


def test_identical_scoring_again_makes_zero_requests(stub, tmp_path):
    cache = JudgeCache(tmp_path / "cache")
    first = score_answers(answers(4), Judge((judge(stub),), HANDBOOK, cache))
    assert len(stub.state.requests) == 4
    stub.state.requests = []
    again = score_answers(answers(4), Judge((judge(stub),), HANDBOOK, cache))
    assert stub.state.requests == []
    assert again[col.score("accuracy")] == first[col.score("accuracy")]
    assert again[col.JUDGE_CACHED] == [True] * 4


def test_schema_format_rejected_falls_back_to_json_mode(stub):
    stub.state.default = "reject_schema"
    evaluations = score_answers(answers(2), Judge((judge(stub, max_concurrency=1),), HANDBOOK))
    assert evaluations[col.JUDGE_ERROR] == [None, None]
    formats = [(r["body"].get("response_format") or {}).get("type") for r in stub.state.requests]
    assert formats == ["json_schema", "json_object", "json_object"]


def test_requests_carry_the_schema_and_token_usage_is_recorded(stub):
    evaluations = score_answers(answers(2), Judge((judge(stub, max_concurrency=2),), HANDBOOK))
    body = stub.state.requests[0]["body"]
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["accuracy"]["properties"]["score"]["enum"] == [1, 2, 3]
    assert body["model"] == "stub-judge" and body["temperature"] == 0.0
    assert evaluations[col.JUDGE_PROMPT_TOKENS] == [100, 100]
    assert evaluations[col.JUDGE_COMPLETION_TOKENS] == [20, 20]


def test_pairwise_and_judge_check_calls_go_through_the_same_retries_and_cache(stub, tmp_path):
    from llm_engineering.evaluation.judging.pairwise import compare_answers
    from llm_engineering.evaluation.trust.card import run_judge_check

    cache = JudgeCache(tmp_path / "cache")
    other = Dataset.from_dict({**answers(2).to_dict(), col.MODEL_ID: ["n"] * 2, col.ANSWER: ["Short.", "Shorter."]})
    stub.state.script = ["500"]  # the first request fails once and is retried
    result = compare_answers(answers(2), other, Judge((judge(stub, max_concurrency=1),), HANDBOOK, cache))
    pairwise_requests = [r["body"] for r in stub.state.requests if r["action"] == "ok"]
    assert len(stub.state.requests) == 5 and len(pairwise_requests) == 4
    assert pairwise_requests[0]["response_format"]["json_schema"]["name"] == "preference"
    assert pairwise_requests[0]["response_format"]["json_schema"]["schema"]["properties"]["better"]["enum"] == [1, 2]
    # The stub always prefers the answer shown first (and gives no logprobs, so its numbers decide): swapping
    # positions turns that into ties, and says so.
    assert result.failed.count == 0 and result.ties.count == 2 and result.win_rate == 0.5
    assert result.order_disagreement.rate == 1.0 and result.position_a_preferred.rate == 1.0

    rows = Dataset.from_dict({**answers(3).to_dict(), col.REFERENCE: ["Ref 0.", "Ref 1.", "Ref 2."]})
    check = run_judge_check(rows, Judge((judge(stub),), HANDBOOK, cache),
                            JudgeCheckConfig(rows=3, threshold=0.7, tiers=["mismatch"]))
    assert check.pairs == 3 and check.ties.count == 3 and check.no_signal  # it scores everything 3
    requests = len(stub.state.requests)
    compare_answers(answers(2), other, Judge((judge(stub),), HANDBOOK, cache))
    run_judge_check(rows, Judge((judge(stub),), HANDBOOK, cache), JudgeCheckConfig(rows=3, threshold=0.7, tiers=["mismatch"]))
    assert len(stub.state.requests) == requests  # both answered from the cache


def test_response_format_none_sends_no_format_and_still_parses_the_verdict(stub):
    evaluations = score_answers(answers(2), Judge((judge(stub, response_format="none"),), HANDBOOK))
    assert [("response_format" in r["body"]) for r in stub.state.requests] == [False, False]
    assert evaluations[col.JUDGE_ERROR] == [None, None]
    assert evaluations[col.score("accuracy")] == [3, 3] and evaluations[col.score("style")] == [2, 2]


def test_retry_after_longer_than_max_backoff_is_capped(stub, monkeypatch):
    waits = []  # what tenacity was asked to sleep; recorded instead of slept, so no cap means no hang
    monkeypatch.setattr(tenacity.nap, "time", SimpleNamespace(sleep=waits.append))
    stub.state.script = [("429", 120), "ok"]
    evaluations = score_answers(answers(1), Judge((judge(stub, max_backoff_s=0.2),), HANDBOOK))
    assert [r["action"] for r in stub.state.requests] == [("429", 120), "ok"]
    assert evaluations[0][col.JUDGE_ERROR] is None and evaluations[0][col.score("accuracy")] == 3
    assert len(waits) == 1 and 0 < waits[0] <= 0.2


def test_request_options_reach_the_server_in_every_request(stub):
    from llm_engineering.evaluation.judging.pairwise import compare_answers

    # top_p is an OpenAI parameter; top_k and chat_template_kwargs are vLLM's, unknown to the openai client.
    options = {"top_p": 0.5, "top_k": 20, "chat_template_kwargs": {"enable_thinking": False}}
    scored = score_answers(answers(2), Judge((judge(stub, request_options=options),), HANDBOOK))
    other = Dataset.from_dict({**answers(2).to_dict(), col.MODEL_ID: ["n"] * 2})
    compared = compare_answers(answers(2), other, Judge((judge(stub, request_options=options),), HANDBOOK))
    assert scored[col.JUDGE_ERROR] == [None, None] and compared.failed.count == 0
    bodies = [r["body"] for r in stub.state.requests]
    assert len(bodies) == 2 + 4  # 2 scores, 2 pairs in both orders
    assert all({key: body.get(key) for key in options} == options for body in bodies)


def test_max_concurrency_bounds_the_requests_in_flight_and_is_reached(stub):
    stub.state.delay = 0.2  # each reply takes long enough for the client's requests to overlap
    evaluations = score_answers(answers(8), Judge((judge(stub, max_concurrency=2),), HANDBOOK))
    assert evaluations[col.JUDGE_ERROR] == [None] * 8 and len(stub.state.requests) == 8
    assert stub.state.max_in_flight == 2
