"""Where settings come from: the environment, and the repository's `.env` or the file LLM_EVAL_ENV_FILE names (none
when empty); relative paths under the repository, from whatever folder the CLI starts."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llm_engineering import settings as settings_module
from llm_engineering.settings import get_settings


def test_the_env_file_is_read_unless_llm_eval_env_file_names_another_or_none(tmp_path, monkeypatch):
    (tmp_path / "repository.env").write_text("DATASET_HUGGINGFACE_WORKSPACE=from-dot-env\n")
    (tmp_path / "other.env").write_text("DATASET_HUGGINGFACE_WORKSPACE=from-other\n")
    monkeypatch.setattr(settings_module, "ENV_FILE", tmp_path / "repository.env")  # the repository's, as tests stand it

    monkeypatch.delenv("LLM_EVAL_ENV_FILE")  # a user's shell: the repository's `.env`
    assert get_settings().DATASET_HUGGINGFACE_WORKSPACE == "from-dot-env"
    get_settings.cache_clear()
    monkeypatch.setenv("LLM_EVAL_ENV_FILE", str(tmp_path / "other.env"))
    assert get_settings().DATASET_HUGGINGFACE_WORKSPACE == "from-other"
    get_settings.cache_clear()
    monkeypatch.setenv("LLM_EVAL_ENV_FILE", "")  # as the tests run: no file at all
    assert get_settings().DATASET_HUGGINGFACE_WORKSPACE == "local"
    get_settings.cache_clear()
    monkeypatch.setenv("DATASET_HUGGINGFACE_WORKSPACE", "from-environment")  # the environment wins over a file
    monkeypatch.setenv("LLM_EVAL_ENV_FILE", str(tmp_path / "other.env"))
    assert get_settings().DATASET_HUGGINGFACE_WORKSPACE == "from-environment"


def test_the_env_file_and_relative_paths_are_the_repositorys_not_the_working_folders(repo_root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("DATASET_HUGGINGFACE_WORKSPACE=from-the-working-folder\n")
    monkeypatch.delenv("LLM_EVAL_ENV_FILE")
    monkeypatch.setattr(settings_module, "ENV_FILE", tmp_path / "no-such.env")  # the repository's own, if any, not read
    monkeypatch.delenv("OUTPUT_DIR")
    assert settings_module.PROJECT_ROOT / ".env" == repo_root / ".env"
    assert get_settings().DATASET_HUGGINGFACE_WORKSPACE == "local"  # the working folder's .env is not the project's
    assert get_settings().OUTPUT_DIR == repo_root / "outputs"
    get_settings.cache_clear()
    monkeypatch.setenv("OUTPUT_DIR", "runs/outputs")
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "judge"))
    settings = get_settings()
    assert settings.OUTPUT_DIR == repo_root / "runs" / "outputs" and settings.reports_dir.is_relative_to(repo_root)
    assert settings.JUDGE_CACHE_DIR == tmp_path / "judge"  # an absolute path as it is


@pytest.fixture
def repository_env_file(repo_root):
    """The repository's `.env`, for the test to write; a developer's own is moved aside meanwhile (to a name git
    ignores) and put back."""
    env, aside = repo_root / ".env", repo_root / ".env.before-tests"
    if env.exists():
        env.rename(aside)
    try:
        yield env
    finally:
        env.unlink(missing_ok=True)
        if aside.exists():
            aside.rename(env)


@pytest.mark.slow  # a CLI process
def test_the_cli_started_from_another_folder_reads_the_repositorys_env_and_writes_under_its_outputs(
        repo_root, tmp_path, repository_env_file):
    # The token only the repository's .env holds: without it, a hub target stops at "HUGGINGFACE_ACCESS_TOKEN is not
    # set"; with it, the run gets as far as the dataset, which is missing, and stops there before any pipeline run.
    repository_env_file.write_text("HUGGINGFACE_ACCESS_TOKEN=hf_only_in_the_repository_env\n")
    (tmp_path / ".env").write_text("HUGGINGFACE_ACCESS_TOKEN=\n")  # the working folder's: not the project's
    config = tmp_path / "run.yaml"
    config.write_text("parameters:\n  publish: {target: hub}\n  judge: {model: smollm2-135m}\n")  # not chosen by timing
    environment = {k: v for k, v in os.environ.items() if k not in ("LLM_EVAL_ENV_FILE", "OUTPUT_DIR")}
    result = subprocess.run([sys.executable, str(repo_root / "tools" / "run.py"), "evaluate", "--config", "run.yaml",
                             "--dataset", "rows.jsonl"], cwd=tmp_path, env=environment, capture_output=True, text=True,
                            timeout=240)
    assert result.returncode == 1, result.stderr
    assert "HUGGINGFACE_ACCESS_TOKEN is not set" not in result.stderr
    # A path on the command line is the working folder's.
    assert f"Dataset file not found: {tmp_path / 'rows.jsonl'}. Check the path given to --dataset" in result.stderr
    log = Path(re.search(r"Log \(library warnings, engine output\): (\S+)", result.stderr).group(1))
    try:
        assert log.parent == repo_root / "outputs" / "logs" and log.is_file()
        assert not (tmp_path / "outputs").exists()
    finally:
        log.unlink(missing_ok=True)
