import os
import subprocess
import sys

import pytest


def run_cli(repo_root, *args):
    env = {k: v for k, v in os.environ.items() if k not in {"OPENAI_API_KEY", "HUGGINGFACE_ACCESS_TOKEN"}}
    return subprocess.run(
        [sys.executable, str(repo_root / "tools" / "run.py"), *args],
        capture_output=True, text=True, cwd=repo_root, timeout=120, env=env,
    )


def test_help_shows_examples_without_importing_heavy_libraries(repo_root):
    result = run_cli(repo_root, "--help")
    assert result.returncode == 0
    assert "--run-evaluation" in result.stdout and "--rescore" in result.stdout
    assert "Examples:" in result.stdout
    # --help must stay instant: vLLM, torch and ZenML take seconds each to import.
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['run.py', '--help']\n"
        "try:\n    runpy.run_path('tools/run.py', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(m for m in ('vllm', 'torch', 'zenml', 'datasets') if m in sys.modules))\n"
    )
    imported = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=repo_root, timeout=60)
    assert imported.stdout.strip().splitlines()[-1] == "[]"


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



def test_bad_dataset_rows_fail_before_generation_with_the_rows_named(repo_root, tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text('{"id": "a", "instruction": "What is RAG?", "output": "Retrieval."}\n'
                    '{"id": "b", "instruction": "", "output": "x"}\n')
    result = run_cli(repo_root, "--run-evaluation", "--dataset", str(data))
    assert result.returncode == 1
    assert "Step load_test_split failed: The test split has 1 bad row(s)" in result.stderr
    assert "row 1 (id b): empty or non-text 'instruction'" in result.stderr
    assert "Traceback" not in result.stderr.split("Error:")[-1]
