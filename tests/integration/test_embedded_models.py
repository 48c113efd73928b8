"""The embedded models' entries against their real PyPI packages (installed by `make install`):
only file names, sizes and the first bytes; joining and converting 1.1 GB is left to first use."""

from llm_engineering.evaluation.embedded_models import EMBEDDED_MODELS, part_paths


def test_every_embedded_model_finds_its_files_and_they_start_a_gguf():
    for alias, model in EMBEDDED_MODELS.items():
        with part_paths(model)[0].open("rb") as first:
            assert first.read(4) == b"GGUF", alias


def test_the_split_model_chunks_add_up_to_the_recorded_size():
    model = EMBEDDED_MODELS["qwen2.5-coder-1.5b"]
    assert sum(path.stat().st_size for path in part_paths(model)) == model.size
