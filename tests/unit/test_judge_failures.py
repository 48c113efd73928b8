"""The judge's failures read back by cause from the errors rows store, counted with an example each; a run with no
valid verdict for a model says why and how to judge its answers again."""

import html

import httpx
import openai
import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.failures import failure_cause, failure_causes, request_error
from llm_engineering.evaluation.report.failures import failure_lines, no_verdict_message
from llm_engineering.evaluation.report.html import render_html
from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary
from llm_engineering.infrastructure.openai_chat import describe

REQUEST = httpx.Request("POST", "http://127.0.0.1:8000/v1/chat/completions")


def _status_error(status, body):
    response = httpx.Response(status, request=REQUEST, json=body)
    return openai.OpenAI(api_key="x", base_url="http://127.0.0.1:8000/v1")._make_status_error_from_response(response)


@pytest.mark.parametrize("error, problem", [
    (_status_error(400, {"error": {"message": "The model `judge` does not exist.", "type": "invalid_request_error"}}),
     "HTTP 400: The model `judge` does not exist."),
    (_status_error(400, {"object": "error", "message": "max_tokens is too large", "code": 400}),  # vLLM's older form
     "HTTP 400: max_tokens is too large"),
    (_status_error(503, {"detail": "down for maintenance"}), 'HTTP 503: {"detail": "down for maintenance"}'),
    (openai.APITimeoutError(REQUEST), "timeout: Request timed out."),
    (openai.APIConnectionError(request=REQUEST), "connection error: Connection error."),
])
def test_an_api_error_is_described_by_the_servers_status_and_message(error, problem):
    assert describe(error) == problem


@pytest.mark.parametrize("error, cause", [
    (request_error("HTTP 400: The model `judge` does not exist.", 1), "HTTP 400"),
    ("request failed after 6 attempt(s): HTTP 503: Error code: 503 - {'error': ...}", "HTTP 503"),  # an older run's
    (request_error("timeout: Request timed out.", 6), "timeout"),
    ("request failed after 6 attempt(s): APITimeoutError: Request timed out.", "timeout"),  # an older run's
    (request_error("connection error: [Errno 111] Connection refused", 6), "connection error"),
    ("request failed after 6 attempt(s): APIConnectionError: Connection error.", "connection error"),
    ("batch batch_7: HTTP 500: The server had an error.", "HTTP 500"),
    ("batch batch_7 expired without running this request", "batch not run"),
    ("batch batch_7: batch_expired: This request could not be executed before the window expired.", "batch not run"),
    ("invalid JSON (Expecting value at char 0)", "invalid JSON"),
    ("invalid verdict (reply.accuracy.score: Input should be less than or equal to 3)", "invalid verdict"),
    ("no preference in the reply ('maybe')", "invalid verdict"),
    ("not judged: the prompt is longer than engine.max_model_len, so no answer was generated", "no answer generated"),
    ("no reply received", "no reply"),
    ("vllm:a: invalid JSON (Expecting value at char 0); vllm:b: HTTP 503: down", "invalid JSON"),  # a jury: the first
    ("something nobody foresaw", "other"),
])
def test_a_stored_error_reads_back_as_its_cause(error, cause):
    assert failure_cause(error) == cause


def test_failures_are_counted_by_cause_most_frequent_first_with_the_first_as_example():
    errors = ["invalid JSON (a)", request_error("HTTP 400: first", 1), request_error("HTTP 400: second", 1)]
    causes = failure_causes(errors)
    assert [(c.cause, c.count, c.example) for c in causes] == [
        ("HTTP 400", 2, request_error("HTTP 400: first", 1)), ("invalid JSON", 1, "invalid JSON (a)")]


def _evaluations(model, errors):
    n = len(errors)
    return Dataset.from_dict({
        col.ID: [f"r{k}" for k in range(n)], col.INSTRUCTION: ["Q?"] * n, col.REFERENCE: ["R."] * n,
        col.MODEL_ID: [model] * n, col.ANSWER: ["A."] * n,
        col.score("accuracy"): [None if e else 3 for e in errors], col.score("style"): [None if e else 2 for e in errors],
        col.analysis("accuracy"): ["-"] * n, col.analysis("style"): ["-"] * n, col.JUDGE_ERROR: errors,
        col.JUDGE_MODEL: ["openai:judge@http://127.0.0.1:8000/v1"] * n, col.COMPLETION_TOKENS: [4] * n,
        col.FINISH_REASON: ["stop"] * n,
    })


def test_a_model_without_any_valid_verdict_is_named_with_its_causes_and_the_fix():
    refused = request_error("HTTP 400: The model `judge` does not exist.", 1)
    summary = build_summary(SummaryInputs([_evaluations("base", [None, "invalid JSON (x)"]),
                                           _evaluations("tuned", [refused, refused, refused])]))
    base, tuned = summary.models
    assert [(c.cause, c.count) for c in base.failures] == [("invalid JSON", 1)]
    assert [(c.cause, c.count, c.example) for c in tuned.failures] == [("HTTP 400", 3, refused)]
    assert failure_lines(summary) == [
        "Judge failures, base: 1 of 2 answers without a valid verdict: 1 invalid JSON (e.g. 'invalid JSON (x)')",
        f"Judge failures, tuned: 3 of 3 answers without a valid verdict: 3 HTTP 400 (e.g. {refused!r})"]
    page = render_html(summary)
    assert "<h3>Judge failures by cause (one example each)</h3>" in page
    assert f"<td>tuned</td><td>HTTP 400</td><td>3 of 3</td><td>{html.escape(refused)}</td>" in page
    message = no_verdict_message(summary)
    assert message.startswith(f"No valid verdict for tuned: all 3 of its answers failed to be judged: 3 HTTP 400 (e.g. "
                              f"{refused!r})")
    assert "base" not in message and "rescore --only-failed" in message


def test_a_run_with_some_valid_verdict_for_every_model_exits_as_usual():
    assert no_verdict_message(build_summary(SummaryInputs([_evaluations("base", [None, "invalid JSON (x)"])]))) is None


def test_prompts_too_long_to_answer_are_not_sent_to_rescore():
    too_long = "not judged: the prompt is longer than engine.max_model_len, so no answer was generated"
    message = no_verdict_message(build_summary(SummaryInputs([_evaluations("base", [too_long])])))
    assert "raise engine.max_model_len" in message and "rescore" not in message
