"""A cached step was computed by the code that runs now: the product's code is in every step's cache key."""

from llm_engineering import code_version


def _tree(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _digest(monkeypatch, root):
    monkeypatch.setattr(code_version, "ROOT", root)
    code_version.code_digest.cache_clear()
    try:
        return code_version.code_digest()
    finally:
        code_version.code_digest.cache_clear()


def test_the_digest_changes_with_the_products_code_and_data_and_nothing_else(tmp_path, monkeypatch):
    files = {"llm_engineering/report.py": "MEAN = 1\n", "llm_engineering/data/split.jsonl": "{}\n",
             "steps/summarize.py": "pass\n", "pipelines/evaluating.py": "pass\n"}
    _tree(tmp_path, files)
    before = _digest(monkeypatch, tmp_path)
    _tree(tmp_path, {"README.md": "docs", "llm_engineering/__pycache__/report.cpython-311.pyc": "x", "tests/t.py": "1"})
    assert _digest(monkeypatch, tmp_path) == before  # docs, byte code and tests are not the product's code
    for name in files:  # the library a step calls, the data shipped with it, a step, a pipeline
        _tree(tmp_path, {name: files[name] + "# changed\n"})
        changed = _digest(monkeypatch, tmp_path)
        assert changed != before
        _tree(tmp_path, {name: files[name]})
        assert _digest(monkeypatch, tmp_path) == before


def test_every_pipeline_keys_its_steps_by_the_digest():
    from pipelines.evaluating import evaluating, publishing, rescoring

    for pipeline in (evaluating, rescoring, publishing):
        policy = pipeline.configuration.cache_policy
        assert f"{policy.cache_func.module}.{policy.cache_func.attribute}" == code_version.CACHE_FUNC
