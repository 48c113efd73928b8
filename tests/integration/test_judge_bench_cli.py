"""`judge-bench` through the CLI: a bad pairs file stops before any judge starts; calibration pairs give a confidence
threshold (synthetic pairs, the OpenAI-compatible stub as judge); the real bundled model judges a handful of the
human-labelled LLMBar pairs (shared/judge-labels, read where it lies, never copied)."""

import json
import random
from pathlib import Path

import pytest
import yaml

from tests.support.cli_output import json_report, report_path
from tests.support.openai_stub import OpenAIStub

LABELS = Path(__file__).resolve().parents[3] / "shared" / "judge-labels"
MARK = "(checked)"


def _pairs(path, sure, unsure, seed):
    """`sure` pairs whose better output (labelled, shown first or second in turn) carries MARK, then `unsure` pairs
    with a random label and no mark, written to `path` as a pairs file."""
    rng = random.Random(seed)
    rows = []
    for k in range(sure + unsure):
        label = 1 + k % 2 if k < sure else rng.choice([1, 2])
        outputs = [f"output {k}.{n}" + (f" {MARK}" if k < sure and n == label else "") for n in (1, 2)]
        rows.append({"id": f"p{k}", "instruction": f"Question {k}?", "output_1": outputs[0], "output_2": outputs[1],
                     "label": label})
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _prefers_the_marked(prompt):
    """A judge sure of the answer that carries MARK, in either position, with a lean to the first shown elsewhere."""
    if "Answer 1:" not in prompt:
        return None  # the pairwise and pointwise prompts: the stub's own replies
    first, second = prompt.split("Answer 1:", 1)[1].split("Answer 2:", 1)
    return {"better": 2} if MARK in second and MARK not in first else {"better": 1}


def test_calibration_pairs_give_a_threshold_that_keeps_the_sure_verdicts(run_cli, tmp_path):
    """judge-bench --calibration through the CLI, everywhere (no engine, no labels outside the repository): synthetic
    pairs in a temporary folder, the OpenAI-compatible stub as the judge. Its averaged preferences are certain where
    an output carries the mark (1 of 1 in both orders) and a coin toss elsewhere (the first shown, in both orders), so
    the threshold found on the calibration pairs keeps exactly the marked pairs of the benched file."""
    calibration = _pairs(tmp_path / "calibration.jsonl", sure=12, unsure=8, seed=1)
    benched = _pairs(tmp_path / "pairs.jsonl", sure=4, unsure=4, seed=2)
    with OpenAIStub() as judge:
        judge.state.answer = _prefers_the_marked
        config = tmp_path / "run.yaml"
        config.write_text(yaml.safe_dump({"parameters": {"judge": {
            "backend": "openai", "model": "stub-judge", "base_url": judge.base_url, "cache": False,
            "max_concurrency": 8}}}))
        result = run_cli("judge-bench", "--pairs", benched, "--calibration", calibration, "--config", config)
    assert result.exit_code == 0, result.output[-3000:]
    report = json_report(result.stdout)
    assert (report["calibration_file"], report["target_agreement"], report["risk"]) == (str(calibration), 0.8, 0.1)
    averaged = report["selective"]["preference_averaged"]
    assert averaged["threshold"] == 1.0 and averaged["calibration_agreement"]["count"] == 12
    assert (averaged["coverage"]["count"], averaged["coverage"]["total"], averaged["agreement"]["rate"]) == (4, 8, 1.0)
    # Each order's written preference is a certainty everywhere, right in 32 of the 40 calibration decisions (80%),
    # which does not show an agreement above 80%: no threshold.
    assert report["selective"]["preference"]["threshold"] is None
    assert "Verdicts kept above a confidence threshold" in result.stdout


def test_a_bad_pairs_file_stops_before_any_judge_with_its_line(run_cli, tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"instruction": "x", "output_1": "a", "output_2": "b", "label": 3}) + "\n")
    result = run_cli("judge-bench", "--pairs", pairs, "--judge", "smollm2-135m")
    assert result.exit_code == 1, result.output[-2000:]
    assert f"{pairs}, line 1: label 3 is not 1, 2 or 0" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.skipif(not (LABELS / "llmbar-natural.jsonl").is_file(), reason="shared/judge-labels is not beside the repo")
def test_the_real_judge_measures_agreement_on_human_pairs_and_a_rerun_asks_nothing(run_cli, tmp_path):
    args = ("judge-bench", "--pairs", LABELS / "llmbar-natural.jsonl", "--limit", 3, "--judge", "smollm2-135m")
    result = run_cli(*args)
    assert result.exit_code == 0, result.output[-3000:]
    report = json_report(result.stdout)
    assert report["pairs"] == 3 and report["judge"] == "vllm:smollm2-135m"
    for way in ("pairwise", "preference", "preference_averaged", "pointwise_expected", "pointwise_integer", "longer",
                "first_shown"):
        assert report["agreement"][way]["total"] == (6 if way in ("pairwise", "preference", "first_shown") else 3)
    assert report["agreement"]["first_shown"]["rate"] == 0.5  # in both orders, the first shown is right once
    decisions = [d["decisions"]["pairwise"] for d in report["details"]]
    assert all(len(d) == 2 and set(d) <= {None, "A", "B", "tie"} for d in decisions)  # a real verdict per order
    # The real engine gives logprobs, so each pair's preference has probabilities in both orders.
    assert all(None not in d["preference"] and 0.0 <= d["preference"][2] <= 1.0 for d in report["details"])
    # 3 pairs: 2 pairwise verdicts, 2 preferences, and 2 pointwise verdicts each with its score asked again first
    assert report["judge_calls"] == 24 and "Judge benchmark" in result.stdout
    # Again, with the same three pairs as calibration pairs (a file outside the repository, as the labels are):
    # everything from the cache, and each way with a confidence (from the real engine's logprobs) has its figures over
    # the pairs' decisions. (Three pairs are too few for any threshold: the synthetic calibration test finds one.)
    calibration = tmp_path / "calibration.jsonl"
    calibration.write_text("".join((LABELS / "llmbar-natural.jsonl").read_text().splitlines(keepends=True)[:3]))
    again = run_cli(*args, "--calibration", calibration)
    assert again.exit_code == 0, again.output[-3000:]
    rerun = json_report(again.stdout)
    failed = sum(report["failed"][way]["count"] for way in ("pairwise", "preference", "pointwise_integer"))
    assert rerun["cached"] >= rerun["judge_calls"] - 2 * failed  # every valid verdict came from the cache
    assert rerun["agreement"] == report["agreement"]
    assert (rerun["calibration_file"], rerun["target_agreement"]) == (str(calibration), 0.8)
    assert {way: figures["coverage"]["total"] for way, figures in rerun["selective"].items()} == {
        "preference_averaged": 3, "preference": 6, "pointwise_expected": 3}
    assert "Verdicts kept above a confidence threshold" in again.stdout


def test_a_judge_refusing_every_request_fails_the_bench_quoting_the_servers_status_and_message(run_cli, tmp_path):
    """A server that answers every request with HTTP 400 and a message: judge-bench prints its table, then exits 4
    with the cause counted and the server's own words (before, it exited 0 with a table of failures and no why)."""
    refusal = "The model `stub-judge` does not exist or you do not have access to it."
    pairs = _pairs(tmp_path / "pairs.jsonl", sure=2, unsure=0, seed=3)
    with OpenAIStub() as judge:
        judge.state.default = ("400", refusal)
        result = run_cli("judge-bench", "--pairs", pairs, "--judge", judge.base_url, "--judge-model", "stub-judge")
    assert result.exit_code == 4, result.output[-3000:]
    # 2 pairs: pairwise and preference in both orders (8 calls), each output scored (4): 12 refusals.
    assert f"Every judge call failed: no verdict on any of the 2 pairs: 12 HTTP 400 (e.g. 'request failed after 1 " \
           f"attempt(s): HTTP 400: {refusal}')" in result.stderr
    assert "Judge failures: 12 verdicts failed: 12 HTTP 400" in result.stdout  # the console, beside the table
    path = report_path(result.stdout)
    assert json.loads(path.read_text())["failures"] == [
        {"cause": "HTTP 400", "count": 12, "example": f"request failed after 1 attempt(s): HTTP 400: {refusal}"}]
    page = path.with_suffix(".html").read_text()
    assert "Judge failures by cause" in page and "<td>HTTP 400</td><td>12</td>" in page
