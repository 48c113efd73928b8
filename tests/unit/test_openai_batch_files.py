"""The Batch API judge's pure parts: the input file it writes, and the replies it reads from the result files."""

import json
import math

import pytest

from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.judging.transport import ReplySchema
from llm_engineering.infrastructure.openai_batch import batch_files, batch_replies, read_results, request_line
from llm_engineering.infrastructure.openai_chat import ChatRequests

SCHEMA = ReplySchema(
    "judge_verdict", {"type": "object", "properties": {"score": {"type": "integer"}, "analysis": {"type": "string"}}}
)


def chat(**options):
    return ChatRequests(JudgeConfig(backend="openai-batch", model="gpt-4o-mini", **options))


def body(text="Rate this.", **options):
    return chat(**options).body([{"role": "user", "content": text}], SCHEMA)


def test_a_request_line_is_one_chat_completion_request_with_its_custom_id():
    line = request_line("key-1", body())
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    request = json.loads(line)
    assert (request["custom_id"], request["method"], request["url"]) == ("key-1", "POST", "/v1/chat/completions")
    assert request["body"]["model"] == "gpt-4o-mini" and request["body"]["messages"][0]["content"] == "Rate this."
    assert request["body"]["response_format"]["json_schema"]["strict"] is True
    assert (request["body"]["logprobs"], request["body"]["top_logprobs"]) == (True, 20)


def test_a_request_line_keeps_the_schema_property_order_the_judge_writes_in():
    properties = json.loads(request_line("k", body()))["body"]["response_format"]["json_schema"]["schema"]["properties"]
    assert list(properties) == ["score", "analysis"]  # score first, not sorted


def test_the_same_requests_make_the_same_file_byte_for_byte():
    bodies = {f"key-{i}": body(f"Rate {i}.") for i in range(3)}
    again = {f"key-{i}": body(f"Rate {i}.") for i in range(3)}
    assert batch_files(bodies) == batch_files(again)
    assert batch_files(bodies) != batch_files({**bodies, "key-0": body("Rate something else.")})


@pytest.mark.parametrize(
    "limits, sizes",
    [({}, [5]), ({"max_requests": 2}, [2, 2, 1]), ({"max_bytes": 1}, [1, 1, 1, 1, 1])],
    ids=["one-file", "by-request-count", "by-bytes"],
)
def test_requests_past_a_file_limit_go_to_further_files_in_order(limits, sizes):
    bodies = {f"key-{i}": body(f"Rate {i}.") for i in range(5)}
    files = batch_files(bodies, **limits)
    assert [len(ids) for _, ids in files] == sizes
    assert [i for _, ids in files for i in ids] == list(bodies)
    assert [json.loads(line)["custom_id"] for data, _ in files for line in data.splitlines()] == list(bodies)


def _completion(text, tokens=None):
    choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
    if tokens is not None:
        choice["logprobs"] = {
            "content": [
                {"token": t, "logprob": top[0][1], "top_logprobs": [{"token": c, "logprob": p} for c, p in top]}
                for t, top in tokens
            ]
        }
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o-mini",
        "choices": [choice],
        "usage": {"prompt_tokens": 812, "completion_tokens": 41, "total_tokens": 853},
    }


def _line(custom_id, status=None, body=None, error=None):
    response = None if status is None else {"status_code": status, "request_id": "r", "body": body}
    return json.dumps({"id": f"batch_req_{custom_id}", "custom_id": custom_id, "response": response, "error": error})


VERDICT = '{"score": 3, "analysis": "Right."}'
TOKENS = [
    ('{"score": ', [('{"score": ', 0.0)]),
    ("3", [("3", math.log(0.7)), ("2", math.log(0.3))]),
    (', "analysis": "Right."}', [(', "analysis": "Right."}', 0.0)]),
]


def test_result_lines_map_to_completions_or_errors_by_custom_id():
    output = _line("a", 200, _completion(VERDICT)) + "\n"
    errors = (
        "\n".join(
            [
                _line("b", 500, {"error": {"message": "The server had an error.", "type": "server_error"}}),
                _line("c", error={"code": "batch_expired", "message": "Not run before the window expired."}),
            ]
        )
        + "\n\n"
    )
    results = {**read_results(errors), **read_results(output)}
    assert results["a"].completion["choices"][0]["message"]["content"] == VERDICT and results["a"].error is None
    assert (results["b"].error, results["b"].status) == ("HTTP 500: The server had an error.", 500)
    assert (results["c"].error, results["c"].status) == ("batch_expired: Not run before the window expired.", None)


def test_batch_replies_carry_usage_compacted_logprobs_and_errors_naming_the_batch():
    judge = chat()
    bodies = {name: body(name) for name in ("ok", "failed", "missing")}
    results = read_results(
        "\n".join(
            [
                _line("ok", 200, _completion(VERDICT, TOKENS)),
                _line("failed", 500, {"error": {"message": "The server had an error.", "type": "server_error"}}),
            ]
        )
    )
    replies, again = batch_replies(judge, bodies, results, batch_id="batch_7",
                                   missing="batch batch_7 expired without running this request")
    assert again == []
    ok = replies["ok"]
    assert (ok.text, ok.error, ok.prompt_tokens, ok.completion_tokens) == (VERDICT, None, 812, 41)
    # Candidates kept only at the first token (a one-word reply is read there) and where a digit (a score) was written.
    assert [candidates is not None for _, candidates in ok.logprobs] == [True, True, False]
    assert ok.logprobs[1] == ("3", [("3", math.log(0.7)), ("2", math.log(0.3))]) and ok.logprobs_problem is None
    assert (replies["failed"].text, replies["failed"].error) == (None, "batch batch_7: HTTP 500: The server had an error.")
    assert replies["missing"].error == "batch batch_7 expired without running this request"


def test_a_refused_response_format_asks_again_in_json_mode_and_other_bad_requests_are_row_errors():
    judge = chat()
    bodies = {"schema": body("a"), "bad": body("b")}
    results = read_results(
        "\n".join(
            [
                _line("schema", 400, {"error": {"message": "response_format json_schema is not supported"}}),
                _line("bad", 400, {"error": {"message": "messages must not be empty"}}),
            ]
        )
    )
    replies, again = batch_replies(judge, bodies, results, batch_id="batch_1", missing="missing")
    assert again == ["schema"] and list(replies) == ["bad"]
    assert replies["bad"].error == "batch batch_1: HTTP 400: messages must not be empty"
    assert judge.body([{"role": "user", "content": "a"}], SCHEMA)["response_format"] == {"type": "json_object"}


def test_refused_logprobs_are_asked_no_more_and_the_replies_say_why():
    judge = chat()
    first = body("a")
    results = read_results(_line("a", 400, {"error": {"message": "logprobs are not supported with this model"}}))
    _, again = batch_replies(judge, {"a": first}, results, batch_id="batch_1", missing="missing")
    second = judge.body([{"role": "user", "content": "a"}], SCHEMA)
    assert again == ["a"] and "logprobs" not in second
    replies, _ = batch_replies(judge, {"a": second}, read_results(_line("a", 200, _completion(VERDICT))), batch_id="batch_2",
                                missing="")
    assert replies["a"].logprobs is None and "refused logprobs" in replies["a"].logprobs_problem


def test_outside_a_zenml_step_step_metadata_is_skipped():
    from llm_engineering.infrastructure.zenml_runs import log_on_running_step

    assert log_on_running_step({"judge_batch batch_1": {"requests": 1}}) is False


def test_the_shipped_batch_config_asks_for_the_batch_judge_at_batch_prices(repo_root):
    from llm_engineering.evaluation.judging.prices import KNOWN_PRICES, judge_prices
    from llm_engineering.run_config import load_run_config

    judge = load_run_config(repo_root / "configs" / "judge-openai-batch.yaml").evaluation.judge
    assert (judge.backend, judge.model, judge.endpoint.base_url) == ("openai-batch", "gpt-4o-mini", None)
    assert judge_prices(judge) == (KNOWN_PRICES["gpt-4o-mini"][0] / 2, KNOWN_PRICES["gpt-4o-mini"][1] / 2)
