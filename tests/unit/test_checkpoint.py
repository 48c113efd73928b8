"""The per-answer checkpoint: what is kept after a crash, and what invalidates it."""

import json

import pytest

from llm_engineering.evaluation.checkpoint import AnswerCheckpoint, AnswerRecord, row_key
from llm_engineering.evaluation.config import EngineConfig, SamplingConfig


def _checkpoint(directory, model_path="org/model", **sampling):
    return AnswerCheckpoint(directory, "org/model", model_path, SamplingConfig(**sampling), EngineConfig())


def _record(text):
    return AnswerRecord(answer=text, finish_reason="stop", prompt_tokens=5, completion_tokens=3)


def test_appended_answers_load_back_by_row_key(tmp_path):
    checkpoint = _checkpoint(tmp_path)
    with checkpoint.writer() as writer:
        writer.append(row_key("a", "prompt a"), "a", _record("answer a"))
        writer.append(row_key("b", "prompt b"), "b", _record("answer b"))
    loaded = checkpoint.load()
    assert loaded == {row_key("a", "prompt a"): _record("answer a"), row_key("b", "prompt b"): _record("answer b")}


def test_a_torn_last_line_is_skipped_and_ended_before_the_next_append(tmp_path):
    checkpoint = _checkpoint(tmp_path)
    with checkpoint.writer() as writer:
        writer.append("k1", "a", _record("kept"))
    with checkpoint.path.open("a") as handle:  # a process killed in the middle of a write
        handle.write('{"key": "k2", "id": "b", "answer": "half')
    assert list(checkpoint.load()) == ["k1"]
    with checkpoint.writer() as writer:
        writer.append("k3", "c", _record("after the crash"))
    assert list(checkpoint.load()) == ["k1", "k3"]
    assert [json.loads(line)["key"] for line in checkpoint.path.read_text().splitlines()[::2]] == ["k1", "k3"]


def test_row_key_changes_with_the_id_or_the_prompt():
    assert row_key("a", "p") == row_key("a", "p")
    assert len({row_key("a", "p"), row_key("b", "p"), row_key("a", "p2")}) == 3


@pytest.mark.parametrize("change", [{"temperature": 0.2}, {"max_tokens": 12}, {"seed": 7}])
def test_changed_sampling_means_another_checkpoint(tmp_path, change):
    assert _checkpoint(tmp_path, **change).path != _checkpoint(tmp_path).path


def test_scheduling_knobs_keep_the_checkpoint(tmp_path):
    base = _checkpoint(tmp_path)
    tuned = AnswerCheckpoint(tmp_path, "org/model", "org/model", SamplingConfig(), EngineConfig(max_num_seqs=4))
    assert tuned.path == base.path


def test_new_weights_in_the_same_folder_mean_another_checkpoint(tmp_path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"0" * 10)
    before = _checkpoint(tmp_path / "ck", model_path=str(folder)).path
    (folder / "model.safetensors").write_bytes(b"1" * 12)  # fine-tuned again into the same folder
    assert _checkpoint(tmp_path / "ck", model_path=str(folder)).path != before


def test_reset_forgets_every_answer(tmp_path):
    checkpoint = _checkpoint(tmp_path)
    with checkpoint.writer() as writer:
        writer.append("k", "a", _record("x"))
    checkpoint.reset()
    assert checkpoint.load() == {}
