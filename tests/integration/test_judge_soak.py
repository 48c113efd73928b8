"""The judge soak on a few hundred verdicts: the real `openai` judge backend against the fault-injecting loopback
server of `tests/support/fault_stub.py`, with the accounting that `benchmarks.soak.judge_soak` runs on thousands.
Every row must end as the server's last reply for its prompt says: a valid verdict, a row error naming the reply's
problem, or (after every retry) the request's failure; none lost."""

from collections import Counter

import pytest

from tests.support.fault_stub import FaultLog, FaultServer
from tests.support.judge_soak import error_cause, judge_rows, kill_and_resume

ATTEMPTS = 6  # judge_rows' max_attempts


def _last_fault_per_prompt(log: FaultLog) -> dict[str, object]:
    last = {}
    for prompt, fault in log.requests:
        last[prompt] = fault
    return last


def test_every_request_ends_as_a_verdict_or_a_row_error_whatever_the_endpoint_does():
    log = FaultLog(seed=3)
    with FaultServer(log) as server:
        figures = judge_rows(300, server.base_url, concurrency=32, cache_dir=None)

    last = _last_fault_per_prompt(log)
    assert len(last) == 300  # every row was asked
    asked = Counter(prompt for prompt, _ in log.requests)
    assert max(asked.values()) <= ATTEMPTS
    injected = Counter(fault for _, fault in log.requests if fault)
    assert {"429", "500", "503", "reset", "slow"} <= set(injected)  # the transient faults did happen, and were retried
    # What each row ends as follows from the last reply the server sent for its prompt.
    ended = Counter("valid" if f is None else "reply not JSON" if f == "bad_json" else "score off the scale"
                    if f == "off_scale" else "failed after every retry" for f in last.values())
    assert figures["valid"] == ended["valid"]
    assert figures["errors_by_cause"].get("reply not JSON", 0) == ended["reply not JSON"]
    assert figures["errors_by_cause"].get("score off the scale", 0) == ended["score off the scale"]
    assert figures["row_errors"] == 300 - ended["valid"]
    assert figures["lost"] == 0


def test_error_causes_name_the_reply_problem_or_the_last_failure():
    assert error_cause("invalid JSON (Expecting value at char 0)") == "reply not JSON"
    assert error_cause("accuracy.score: Input should be less than or equal to 3") == "score off the scale"
    assert error_cause("request failed after 6 attempt(s): HTTP 503: unavailable") == "HTTP 503 after every retry"
    assert error_cause("request failed after 6 attempt(s): APITimeoutError: Request timed out.") == \
        "APITimeoutError after every retry"


@pytest.mark.slow  # a process of its own, killed, then the run again
def test_a_run_killed_half_way_resumes_asking_only_what_it_had_not_stored():
    result = kill_and_resume(200, concurrency=16, seed=5)

    assert 0 < result["stored_before_kill"] < 200
    assert result["asked_in_rerun"] == result["missing_before_rerun"] == 200 - result["stored_before_kill"]
    rerun = result["rerun"]
    assert rerun["cached"] == result["stored_before_kill"]
    assert rerun["valid"] + rerun["row_errors"] == 200 and rerun["lost"] == 0
