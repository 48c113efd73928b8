import os
import subprocess
import sys
import time

import pytest


def run_cli(repo_root, *args):
    env = {k: v for k, v in os.environ.items() if k not in {"OPENAI_API_KEY", "HUGGINGFACE_ACCESS_TOKEN"}}
    return subprocess.run(
        [sys.executable, str(repo_root / "tools" / "run.py"), *args],
        capture_output=True, text=True, cwd=repo_root, timeout=120, env=env,
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


@pytest.mark.parametrize(
    "parameters, message",
    [
        ("judge:\n    modle: x", "parameters.judge.modle: unknown key"),
        ("publish: {target: hub}", "HUGGINGFACE_ACCESS_TOKEN is not set"),
        ("judge: {backend: openai, model: gpt-4o-mini}", "OPENAI_API_KEY is not set"),
    ],
    ids=["misspelt-key", "hub-without-token", "openai-without-key"],
)
def test_bad_settings_stop_before_any_work(repo_root, tmp_path, parameters, message):
    config = tmp_path / "run.yaml"
    config.write_text(f"parameters:\n  {parameters}\n")
    result = run_cli(repo_root, "--run-evaluation", "--config", str(config))
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_model_stops_before_any_work(repo_root):
    result = run_cli(repo_root, "--run-evaluation", "--model", "no such model")
    assert result.returncode == 1
    assert "Unknown model 'no such model'" in result.stderr

