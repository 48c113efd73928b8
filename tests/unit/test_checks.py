"""Per-row checks: each type on an answer that passes and one that fails with its reason, a pathological regex cut
at its time limit, a bad check refused where the split (or the config) is read, naming the row and the fix, and
the columns the evaluations store."""

import json
import time

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.evaluation.generation.dataset import DatasetError, read_split, validate_split
from llm_engineering.evaluation.metrics.check_rows import read_checks
from llm_engineering.evaluation.metrics.checks import REGEX_TIMEOUT_S
from llm_engineering.evaluation.metrics.measure import measure_answers
from llm_engineering.run_config import parse_evaluation

SCHEMA = {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["name", "size"]}


@pytest.mark.parametrize("check, passing, failing, reason", [
    ({"type": "contains", "value": "LoRA"}, "We use lora adapters.", "We use adapters.", '"LoRA" is not in the answer'),
    ({"type": "contains", "value": "LoRA", "case_sensitive": True}, "LoRA", "lora", '"LoRA" is not in the answer'),
    ({"type": "not_contains", "value": "as an AI"}, "Paris.", "As an AI, I cannot.", 'the answer holds "as an AI"'),
    ({"type": "equals", "value": "Paris"}, " paris\n", "Paris, France", 'the answer is "Paris, France", not "Paris"'),
    ({"type": "starts_with", "value": "Yes"}, "yes, it does", "No.", 'the answer starts "No."'),
    ({"type": "ends_with", "value": "."}, "Done.", "Done!", 'the answer ends "Done!"'),
    ({"type": "regex", "value": "^\\d+ GB$"}, "16 GB", "16 gigabytes", 'no match for "^\\\\d+ GB$"'),
    ({"type": "is_json"}, '```json\n{"a": 1}\n```', "{'a': 1}", "not JSON: Expecting property name enclosed in double"),
    ({"type": "json_keys", "value": ["name", "size"]}, '{"name": "x", "size": 2}', '{"name": "x"}',
     'missing key(s) "size"'),
    ({"type": "json_keys", "value": ["name"]}, '{"name": 1}', "[1, 2]", "the JSON is a list, not an object"),
    ({"type": "json_schema", "value": SCHEMA}, '{"name": "x", "size": 2}', '{"name": "x", "size": "big"}',
     "schema: 'big' is not of type 'integer' (at size)"),
    ({"type": "min_words", "value": 3}, "one two three", "one two", "2 words, fewer than 3"),
    ({"type": "max_words", "value": 2}, "one two", "one two three", "3 words, more than 2"),
    ({"type": "max_chars", "value": 5}, "12345", "123456", "6 characters, more than 5"),
    ({"type": "number", "value": 1000}, "In all: 1,000.", "About 999 of them.", "the final number is 999, not 1000"),
    ({"type": "number", "value": 3.14, "tolerance": 0.01}, "pi is 3.141", "pi is 3.2", "the final number is 3.2, not "
     "3.14 within 0.01"),
    ({"type": "number", "value": -2}, "It falls to -2", "No idea.", "no number in the answer"),
])
def test_each_check_passes_a_right_answer_and_fails_a_wrong_one_saying_why(check, passing, failing, reason):
    (read,) = read_checks([check])
    assert read.failure(passing) is None
    assert read.failure(failing).startswith(reason), read.failure(failing)


def test_a_pathological_regex_fails_its_check_at_the_time_limit_instead_of_hanging():
    # `(a|aa)+$` backtracks through every split of the a's before the b (the `regex` package cuts `(a+)+$` short by
    # itself, so that classic takes no time here); without a limit this search runs for hours.
    (check,) = read_checks([{"type": "regex", "value": "(a|aa)+$"}])
    started = time.perf_counter()
    reason = check.failure("a" * 40 + "b")
    assert time.perf_counter() - started < REGEX_TIMEOUT_S + 2
    assert reason.startswith("the pattern ran past its 1 s limit"), reason


BAD = [
    ({"type": "contain", "value": "x"}, "unknown check type 'contain'; use one of contains, not_contains"),
    ({"type": "regex", "value": "(unclosed"}, "the pattern '(unclosed' does not compile"),
    ({"type": "json_schema", "value": {"type": "objekt"}}, "the schema is not valid JSON Schema"),
    ({"type": "min_words", "value": "ten"}, "value: Input should be a valid integer"),
    ({"type": "contains", "value": 3}, "value: Input should be a valid string"),
]


@pytest.mark.parametrize("check, problem", BAD, ids=[c["type"] for c, _ in BAD])
def test_a_bad_check_stops_the_split_where_it_is_loaded_naming_the_row_and_the_fix(check, problem):
    source = Dataset.from_list([
        {"id": "q1", "instruction": "Say hi.", "checks": json.dumps([{"type": "contains", "value": "hi"}])},
        {"id": "q2", "instruction": "Say bye.", "checks": json.dumps([{"type": "max_words", "value": 5}, check])},
    ])
    with pytest.raises(DatasetError) as error:
        validate_split(source)
    message = str(error.value)
    assert "row 1 (id q2): 'checks': check 2 " in message and problem in message, message
    assert "write it as {\"type\": " in message or "use one of" in message  # how to write it right
    # The config's checks are read the same way, and stop the config.
    with pytest.raises(ConfigError, match="parameters.checks: check 1 .*" + problem.split("'")[0]):
        parse_evaluation({"checks": [check]})


def test_checks_from_a_jsonl_list_and_a_csv_cell_and_a_category_reach_the_split(tmp_path):
    jsonl, csv = tmp_path / "rows.jsonl", tmp_path / "rows.csv"
    # Differently keyed checks load as one struct type (keys a check lacks: None); the reader drops them.
    jsonl.write_text("\n".join(json.dumps(r) for r in [
        {"id": "a", "instruction": "x", "topic": "math", "checks": [{"type": "number", "value": 4, "tolerance": 0.5}]},
        {"id": "b", "instruction": "y", "topic": "", "checks": [{"type": "contains", "value": "z", "case_sensitive": True},
                                                                {"type": "is_json"}]},
    ]) + "\n")
    csv.write_text('id,instruction,checks\nc,x,"[{""type"": ""min_words"", ""value"": 2}]"\nd,y,\n')
    from llm_engineering.evaluation.config import ColumnsConfig

    split = validate_split(read_split(str(jsonl)), ColumnsConfig(category="topic"))
    assert [json.loads(text) for text in split[col.CHECKS]] == [
        [{"type": "number", "value": 4.0, "tolerance": 0.5}],
        [{"type": "contains", "value": "z", "case_sensitive": True}, {"type": "is_json"}]]
    assert split[col.CATEGORY] == ["math", None]
    assert validate_split(read_split(str(csv)))[col.CHECKS] == ['[{"type": "min_words", "value": 2}]', None]


def test_the_evaluations_store_each_checks_verdict_the_share_passed_and_whether_all_did():
    rows = Dataset.from_dict({
        col.ID: ["a", "b", "c"], col.ANSWER: ["LoRA on one GPU", "full fine-tuning", "x"],
        col.FINISH_REASON: ["stop", "stop", col.PROMPT_TOO_LONG],
        col.CHECKS: ['[{"type": "contains", "value": "lora"}]', None, None]})
    measured = measure_answers(rows, [], read_checks([{"type": "max_words", "value": 3}]))  # the config's: every row
    assert measured[col.CHECKS_PASSED] == [False, True, None]  # no answer generated: not checked
    assert measured[col.CHECK_SHARE] == [0.5, 1.0, None]
    (words, lora), (only,) = measured[col.CHECK_RESULTS][:2]
    assert words == {"type": "max_words", "value": "3", "passed": False, "reason": "4 words, more than 3"}
    assert lora == {"type": "contains", "value": '"lora"', "passed": True, "reason": None} and only["passed"]
    assert measure_answers(rows.remove_columns(col.CHECKS), []).column_names == rows.remove_columns(
        col.CHECKS).column_names  # no check anywhere: no check columns


def test_the_command_line_names_the_metrics_the_category_and_the_checks_column():
    from llm_engineering.run_config import EvaluationConfig
    from llm_engineering.run_overrides import Overrides, apply_overrides

    default = EvaluationConfig()
    assert default.metrics[:2] == ["reference_words", "token_f1"] and default.similarity_measured
    config = apply_overrides(default, Overrides(metrics=["chrf", "token_f1"], group_by="topic", columns=["checks=rules"]))
    assert config.measures.metrics == ["chrf", "token_f1"] and not config.similarity_measured
    assert (config.dataset.columns.category, config.dataset.columns.checks) == ("topic", "rules")
    with pytest.raises(ConfigError, match="parameters.metrics.0: Input should be 'reference_words'"):
        apply_overrides(default, Overrides(metrics=["rouge"]))
