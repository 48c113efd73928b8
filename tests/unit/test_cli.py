import subprocess
import sys
import time


def run_cli(repo_root, *args):
    return subprocess.run(
        [sys.executable, str(repo_root / "tools" / "run.py"), *args],
        capture_output=True, text=True, cwd=repo_root, timeout=120,
    )


def test_help_is_instant_and_shows_examples(repo_root):
    started = time.perf_counter()
    result = run_cli(repo_root, "--help")
    assert result.returncode == 0
    assert "--run-evaluation" in result.stdout and "--rescore" in result.stdout
    assert "Examples:" in result.stdout
    # --help must not import vLLM, torch or ZenML (seconds each).
    assert time.perf_counter() - started < 5


def test_without_run_evaluation_nothing_runs(repo_root):
    result = run_cli(repo_root, "--limit", "2")
    assert result.returncode == 2
    assert "pass --run-evaluation" in result.stderr


def test_config_errors_stop_before_any_work(repo_root, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("parameters:\n  judge:\n    modle: x\n")
    result = run_cli(repo_root, "--run-evaluation", "--config", str(bad))
    assert result.returncode == 1
    assert "parameters.judge.modle: unknown key" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_model_stops_before_any_work(repo_root):
    result = run_cli(repo_root, "--run-evaluation", "--model", "no such model")
    assert result.returncode == 1
    assert "Unknown model 'no such model'" in result.stderr


def test_hub_publishing_without_a_token_stops_before_generation(repo_root, tmp_path):
    config = tmp_path / "hub.yaml"
    config.write_text("parameters:\n  publish: {target: hub}\n")
    result = run_cli(repo_root, "--run-evaluation", "--config", str(config))
    assert result.returncode == 1
    assert "HUGGINGFACE_ACCESS_TOKEN is not set" in result.stderr


def test_openai_judge_without_key_or_endpoint_stops_before_work(repo_root, tmp_path):
    config = tmp_path / "judge.yaml"
    config.write_text("parameters:\n  judge: {backend: openai, model: gpt-4o-mini}\n")
    result = run_cli(repo_root, "--run-evaluation", "--config", str(config))
    assert result.returncode == 1
    assert "OPENAI_API_KEY is not set" in result.stderr
