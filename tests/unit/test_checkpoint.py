"""The per-answer checkpoint: what is kept after a crash, and what invalidates it."""

import json
import time

import pytest

from llm_engineering.evaluation.config import SamplingConfig
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.generation.checkpoint import AnswerCheckpoint, AnswerRecord, row_key


def _checkpoint(directory, model_path="org/model", **sampling):
    return AnswerCheckpoint(directory, "org/model", model_path, sampling=SamplingConfig(**sampling), engine=EngineConfig())


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
    tuned = AnswerCheckpoint(tmp_path, "org/model", "org/model", sampling=SamplingConfig(),
                             engine=EngineConfig(max_num_seqs=4))
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


def test_damaged_lines_anywhere_are_skipped_counted_and_named_and_every_good_line_kept(tmp_path, caplog):
    checkpoint = _checkpoint(tmp_path)
    with checkpoint.writer() as writer:
        writer.append("k1", "a", _record("first"))
    with checkpoint.path.open("a") as handle:  # garbage, then a line of the wrong types, in the middle
        handle.write("\x00\x00 not json at all\n")
        handle.write(json.dumps({"key": "k2", "id": "b", "answer": 42, "finish_reason": "stop",
                                 "prompt_tokens": "many", "completion_tokens": 1}) + "\n")
    with checkpoint.writer() as writer:
        writer.append("k3", "c", _record("last"))
    with caplog.at_level("WARNING"):
        assert list(checkpoint.load()) == ["k1", "k3"]
    assert f"Skipped 2 incomplete or damaged line(s) of {checkpoint.path}" in caplog.text


class _HeldEngine:
    """A stand-in engine (what is under test is the checkpoint shared by two processes): after its first answer
    it waits for `release`, counting the prompts it was asked for."""

    def __init__(self, release):
        self.release, self.asked = release, 0

    def get_tokenizer(self):
        return lambda prompts, add_special_tokens=False: {"input_ids": [[0] * len(p.split()) for p in prompts]}

    def generate(self, prompts, sampling, samples=None):
        for i, text in prompts.items():
            self.asked += 1
            yield i, AnswerRecord(answer=f"answer to {text}", finish_reason="stop", prompt_tokens=3, completion_tokens=3)
            assert self.release.wait(120)

    def close(self):
        pass


def _generate_in_another_process(directory, rows, release, waiting, results):
    import logging

    from datasets import Dataset

    from llm_engineering.evaluation.config import PromptConfig
    from llm_engineering.evaluation.generation.answers import answer_test_split

    messages = []

    def emit(record):
        messages.append(record.getMessage())
        if "Another run is generating into" in messages[-1]:
            waiting.set()

    handler = logging.Handler()
    handler.emit = emit
    logging.getLogger("llm_engineering").addHandler(handler)
    logging.getLogger("llm_engineering").setLevel(logging.INFO)
    split = Dataset.from_dict({"id": [str(i) for i in range(rows)], "instruction": [f"q{i}" for i in range(rows)],
                               "reference": ["r"] * rows, "prompt": [f"prompt {i}" for i in range(rows)]})
    engine = _HeldEngine(release)
    _, stats = answer_test_split(engine, split, "org/model", sampling=SamplingConfig(), prompt=PromptConfig(),
                                 max_model_len=2048, checkpoint=_checkpoint(directory))
    results.put((stats.resumed, stats.generated, engine.asked, messages))


@pytest.mark.slow  # two processes
def test_two_runs_with_one_checkpoint_take_turns_and_the_second_reuses_every_answer(tmp_path):
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    results, release, waiting = context.Queue(), context.Event(), context.Event()
    first = context.Process(target=_generate_in_another_process, args=(tmp_path, 6, release, waiting, results))
    second = context.Process(target=_generate_in_another_process, args=(tmp_path, 6, release, waiting, results))
    first.start()
    checkpoint = _checkpoint(tmp_path)
    while not checkpoint.path.exists():  # the first run holds the checkpoint: start the second now
        assert first.is_alive(), "the first run ended before it wrote anything"
    second.start()
    assert waiting.wait(120), "the second run did not wait for the first"
    release.set()  # the first run may finish now
    outcomes = [results.get(timeout=120) for _ in range(2)]
    for process in (first, second):
        process.join(timeout=60)
        assert process.exitcode == 0
    (generated,) = [o for o in outcomes if o[1]]
    (reused,) = [o for o in outcomes if not o[1]]
    assert generated[:3] == (0, 6, 6)
    assert reused[:3] == (6, 0, 0)  # the second asked its engine for nothing
    lines = [json.loads(line) for line in checkpoint.path.read_text().splitlines()]
    assert sorted(line["id"] for line in lines) == [str(i) for i in range(6)]  # every row once


def test_a_full_disk_while_saving_an_answer_names_the_folder_and_keeps_what_was_saved(tmp_path):
    from tests.support.small_disk import small_disk

    with small_disk(tmp_path / "disk", "8k") as disk:  # room for a few answers of 1,000 characters
        checkpoint = _checkpoint(disk)
        saved = []
        with pytest.raises(OSError, match=f"No space left on the disk of {disk} to save an answer"):
            with checkpoint.writer() as writer:  # the disk fills during a line; closing must not fail again
                for i in range(100):
                    writer.append(f"k{i}", str(i), _record("x" * 1000))
                    saved.append(f"k{i}")
        assert saved and list(checkpoint.load()) == saved  # the torn line is skipped; a rerun generates only the rest


def test_a_fresh_run_empties_the_checkpoint_only_once_the_run_generating_into_it_has_ended(tmp_path, caplog):
    import threading

    from datasets import Dataset

    from llm_engineering.evaluation.config import PromptConfig
    from llm_engineering.evaluation.generation.answers import answer_test_split

    checkpoint = _checkpoint(tmp_path)
    with checkpoint.writer() as writer:
        writer.append("k1", "a", _record("saved by an earlier run"))
    split = Dataset.from_dict({"id": ["0", "1"], "instruction": ["q0", "q1"], "reference": ["r", "r"],
                               "prompt": ["prompt 0", "prompt 1"]})
    released = threading.Event()
    released.set()
    engine = _HeldEngine(released)
    outcome = {}

    def fresh_run():
        outcome["stats"] = answer_test_split(engine, split, "org/model", sampling=SamplingConfig(), prompt=PromptConfig(),
                                             max_model_len=2048, checkpoint=_checkpoint(tmp_path), fresh=True)[1]

    with caplog.at_level("WARNING"):
        with _checkpoint(tmp_path).exclusive():  # another run generating into this checkpoint
            fresh = threading.Thread(target=fresh_run)
            fresh.start()
            while "Another run is generating into" not in caplog.text:
                assert fresh.is_alive(), "the fresh run did not wait"
                time.sleep(0.05)
            assert list(checkpoint.load()) == ["k1"]  # the other run's file is left alone while it runs
        fresh.join(timeout=60)
    assert (outcome["stats"].resumed, outcome["stats"].generated, engine.asked) == (0, 2, 2)
    assert sorted(json.loads(line)["id"] for line in checkpoint.path.read_text().splitlines()) == ["0", "1"]


class _SeededEngine:
    """A stand-in engine whose answer names the seed it was drawn with; it stops after `stop_after` answers, as a
    killed run does, when given."""

    def __init__(self, stop_after=None):
        self.asked, self.stop_after = [], stop_after

    def get_tokenizer(self):
        return lambda prompts, add_special_tokens=False: {"input_ids": [[0] * len(p.split()) for p in prompts]}

    def generate(self, prompts, sampling, samples=None):
        for i, text in prompts.items():
            if self.stop_after is not None and len(self.asked) == self.stop_after:
                raise KeyboardInterrupt
            sample = (samples or {}).get(i, 0)
            self.asked.append((text, sample))
            yield i, AnswerRecord(answer=f"{text} seed {sampling.seed_of(sample)}", finish_reason="stop",
                                  prompt_tokens=3, completion_tokens=3)

    def close(self):
        pass


def _split(rows):
    from datasets import Dataset

    return Dataset.from_dict({"id": [str(i) for i in range(rows)], "instruction": [f"q{i}" for i in range(rows)],
                              "reference": ["r"] * rows, "prompt": [f"prompt {i}" for i in range(rows)]})


def _answer(engine, rows, checkpoint, **sampling):
    from llm_engineering.evaluation.config import PromptConfig
    from llm_engineering.evaluation.generation.answers import answer_test_split

    return answer_test_split(engine, _split(rows), "org/model", sampling=SamplingConfig(**sampling), prompt=PromptConfig(),
                             max_model_len=2048, checkpoint=checkpoint)


def test_samples_give_each_prompt_n_answers_side_by_side_each_with_its_own_seed(tmp_path):
    generations, stats = _answer(_SeededEngine(), 2, _checkpoint(tmp_path), n=3, seed=10)
    assert generations["id"] == ["0", "0", "0", "1", "1", "1"]
    assert generations["sample"] == [0, 1, 2, 0, 1, 2]
    assert generations["answer"][:3] == ["prompt 0 seed 10", "prompt 0 seed 11", "prompt 0 seed 12"]
    assert generations["instruction"][4] == "q1" and generations["reference"][4] == "r"
    assert (stats.rows, stats.samples, stats.generated) == (6, 3, 6)
    unseeded = _SeededEngine()
    _answer(unseeded, 1, _checkpoint(tmp_path / "unseeded", seed=None), n=2, seed=None)
    assert [s for _, s in unseeded.asked] == [0, 1]  # told apart by sample number, the engine's own seed unset


def test_a_killed_run_with_samples_resumes_per_answer_and_more_samples_keep_the_first(tmp_path):
    checkpoint = _checkpoint(tmp_path)  # n is not part of the checkpoint: answer s is the same whatever n is
    with pytest.raises(KeyboardInterrupt):
        _answer(_SeededEngine(stop_after=4), 3, checkpoint, n=2)
    resumed = _SeededEngine()
    generations, stats = _answer(resumed, 3, checkpoint, n=2)
    assert (stats.resumed, stats.generated) == (4, 2)
    assert resumed.asked == [("prompt 2", 0), ("prompt 2", 1)]
    assert generations["answer"] == [f"prompt {i} seed {42 + s}" for i in range(3) for s in range(2)]
    more = _SeededEngine()
    _, stats = _answer(more, 3, checkpoint, n=3)
    assert (stats.resumed, stats.generated) == (6, 3)
    assert sorted(more.asked) == [(f"prompt {i}", 2) for i in range(3)]
    single = _SeededEngine()
    generations, _ = _answer(single, 3, checkpoint)  # one answer per prompt: sample 0 of the runs above
    assert single.asked == [] and generations["sample"] == [0, 0, 0]
