"""`judge.model: auto` and the summary's first line: which judge a machine gets, and what the run then says."""

import pytest

from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.report.trust_text import judge_headline
from llm_engineering.evaluation.stored.figures import Rate
from llm_engineering.infrastructure.judge_choice import resolve_auto_judge
from llm_engineering.run_config import EvaluationConfig, parse_evaluation, with_judges_chosen

BF16 = lambda: ("bfloat16", "this CPU has native bf16 (avx512_bf16) and its bf16 matmuls ran at 2.80x fp32")  # noqa: E731
FP32 = lambda: ("float32", "this CPU has no native bf16 (no avx512_bf16 or amx_bf16)")  # noqa: E731
VNNI = lambda: ["avx512_vnni"]  # noqa: E731
NO_VNNI = lambda: []  # noqa: E731


@pytest.mark.parametrize("on_cpu, cpu_dtype, int8_flags, model", [
    (False, FP32, VNNI, "qwen2.5-coder-1.5b"),  # a GPU: whatever the CPU
    (True, BF16, NO_VNNI, "qwen2.5-coder-1.5b"),
    (True, BF16, VNNI, "qwen2.5-coder-1.5b-int8"),  # fast bf16 and fast int8: the int8 weights
    (True, FP32, VNNI, "qwen2.5-coder-1.5b"),  # no fast bf16: the 1.5B judge in float32, slow but with signal
    (True, FP32, NO_VNNI, "qwen2.5-coder-1.5b"),
])
def test_auto_takes_the_judge_with_signal_where_the_machine_runs_it_fast(on_cpu, cpu_dtype, int8_flags, model):
    judge, line = resolve_auto_judge(JudgeConfig(), on_cpu=on_cpu, cpu_dtype=cpu_dtype, int8_flags=int8_flags)
    assert judge.model == model and judge.rubric == JudgeConfig().rubric
    assert line.startswith(f"Judge {model} (judge.model: auto): ")
    if cpu_dtype is FP32 and on_cpu:  # the reason, and the way to a smoke test
        assert "no native bf16" in line and "float32" in line and "judge.model: smollm2-135m" in line
    if model.endswith("int8"):  # the flags that decided it, and the way to the bf16 weights
        assert "int8 dot products (avx512_vnni)" in line and "judge.model: qwen2.5-coder-1.5b takes" in line


def test_a_named_judge_is_kept_and_auto_is_resolved_for_each_juror():
    named = EvaluationConfig.model_validate({"judge": {"model": "smollm2-135m"}})
    assert with_judges_chosen(named, on_cpu=True, cpu_dtype=BF16, int8_flags=NO_VNNI) == (named, [])
    jury = EvaluationConfig.model_validate({"judges": [{"model": "auto"}, {"model": "smollm2-135m", "temperature": 1.0}]})
    chosen, lines = with_judges_chosen(jury, on_cpu=True, cpu_dtype=BF16, int8_flags=NO_VNNI)
    assert [j.model for j in chosen.judges] == ["qwen2.5-coder-1.5b", "smollm2-135m"] and len(lines) == 1


def test_auto_names_no_endpoint_model():
    with pytest.raises(Exception, match="auto picks an in-process judge"):
        parse_evaluation({"judge": {"backend": "openai", "base_url": "http://127.0.0.1:9/v1"}})


def _check(rate_count, tiers=(), no_signal=False):
    from llm_engineering.evaluation.stored.trust import JudgeCheck

    def rate(count, total=20):
        return Rate(count=count, total=total, rate=count / total, ci=[0.5, 0.9])

    def one(tier, count, flagged):
        return JudgeCheck(judge_model="vllm:qwen2.5-coder-1.5b", tier=tier, pairs=20, reference_higher=rate(count),
                          ties=rate(0), reversals=rate(20 - count), failed=rate(0), reference_accuracy_mean=2.5,
                          mismatched_accuracy_mean=1.2, threshold=0.7, no_signal=flagged, verdict="...")

    check = one("mismatch", rate_count, no_signal)
    return check.model_copy(update={"tiers": [one(t, c, False) for t, c in tiers]})


def test_the_first_line_says_no_signal_for_a_flagged_check_and_for_a_smoke_judge_without_one():
    flagged = judge_headline("vllm:qwen2.5-coder-1.5b", _check(9, no_signal=True))
    assert flagged.startswith("NO SIGNAL: the judge qwen2.5-coder-1.5b") and "9/20" in flagged
    smoke = judge_headline("vllm:smollm2-135m", None)
    assert smoke.startswith("NO SIGNAL: the judge smollm2-135m is a smoke-test judge")
    assert "judge.model: qwen2.5-coder-1.5b" in smoke  # how to get a judge with signal
    assert "judge.model: qwen2.5-coder-1.5b" not in flagged and "stronger served or OpenAI judge" in flagged  # not itself


def test_the_first_line_gives_the_report_card_of_a_judge_with_signal():
    line = judge_headline("vllm:qwen2.5-coder-1.5b", _check(18, tiers=[("same_topic", 19), ("truncated", 15)]))
    assert line.startswith("Judge qwen2.5-coder-1.5b: passes every tier of its report card, better than every rule "
                           "without a judge: better than every rule without a judge on mismatch (18/20")
    assert "same_topic (19/20" in line and "truncated (15/20" in line and "NO SIGNAL" not in line
    assert "integer scores" in line
    unchecked = judge_headline("openai:gpt-4o-mini", None)
    assert "not checked in this run" in unchecked and "NO SIGNAL" not in unchecked
