"""Where settings come from: the environment, and `.env` or the file LLM_EVAL_ENV_FILE names (none when empty)."""

from llm_engineering.settings import get_settings


def test_the_env_file_is_read_unless_llm_eval_env_file_names_another_or_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("DATASET_HUGGINGFACE_WORKSPACE=from-dot-env\n")
    (tmp_path / "other.env").write_text("DATASET_HUGGINGFACE_WORKSPACE=from-other\n")

    monkeypatch.delenv("LLM_EVAL_ENV_FILE")  # a user's shell: `.env` in the working directory
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
