"""`judge-bench` through the CLI: a bad pairs file stops before any judge starts; the real bundled model judges a
handful of the human-labelled LLMBar pairs (shared/judge-labels, read where it lies, never copied)."""

import json
from pathlib import Path

import pytest

LABELS = Path(__file__).resolve().parents[3] / "shared" / "judge-labels"


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
    report = json.loads(Path(result.stdout.split("JSON report: ")[1].split("\n")[0]).read_text())
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
    # everything from the cache, and three pairs are too few to show any confidence agrees over 80%.
    calibration = tmp_path / "calibration.jsonl"
    calibration.write_text("".join((LABELS / "llmbar-natural.jsonl").read_text().splitlines(keepends=True)[:3]))
    again = run_cli(*args, "--calibration", calibration)
    assert again.exit_code == 0, again.output[-3000:]
    rerun = json.loads(Path(again.stdout.split("JSON report: ")[1].split("\n")[0]).read_text())
    failed = sum(report["failed"][way]["count"] for way in ("pairwise", "preference", "pointwise_integer"))
    assert rerun["cached"] >= rerun["judge_calls"] - 2 * failed  # every valid verdict came from the cache
    assert rerun["agreement"] == report["agreement"]
    assert (rerun["calibration_file"], rerun["target_agreement"]) == (str(calibration), 0.8)
    for way in ("preference_averaged", "preference"):
        assert rerun["selective"][way]["threshold"] is None and rerun["selective"][way]["coverage"]["count"] == 0
    assert "Verdicts kept above a confidence threshold" in again.stdout
