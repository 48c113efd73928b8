"""A user's mistakes in data and flags, each stopped before any work with the problem and its fix: columns mapped
twice or shared, a reference that is not one, `--split` on a file, a file's encoding, a missing split; and the
settings that change results (`--prompt-template`, `--max-tokens`) reaching the run config."""

import json

import pytest
from datasets import Dataset, DatasetDict

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import ColumnsConfig, DatasetConfig
from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.evaluation.generation.dataset import DatasetError, read_test_split, validate_split
from llm_engineering.run_config import EvaluationConfig
from llm_engineering.run_overrides import Overrides, apply_overrides

# Written in a user's editor on Windows: a BOM, CRLF line ends, the columns named their own way.
USERS_CSV = ("\ufeffquestion,gold,key\r\nWhat does RAG retrieve?,Documents relevant to the question.,k1\r\n"
             "What is LoRA?,Low-rank adapters trained on a frozen model.,k2\r\n")


def _columns(**named):
    return apply_overrides(EvaluationConfig(), Overrides(columns=[f"{r}={n}" for r, n in named.items()])).dataset.columns


def test_a_role_mapped_twice_on_the_command_line_is_refused_not_the_last_kept():
    with pytest.raises(ConfigError) as error:
        apply_overrides(EvaluationConfig(), Overrides(columns=["instruction=a", "instruction=b"]))
    assert str(error.value) == ("--column instruction= is given 2 times (a, b): a role has one column; give --column "
                                "instruction=NAME once.")


@pytest.mark.parametrize("columns, message", [
    ({"reference": "instruction"},
     "The column 'instruction' would fill two roles, instruction (found by its usual name) and reference (--column "
     "reference=instruction): one column fills one role."),
    ({"instruction": "question", "reference": "question"},
     "The column 'question' would fill two roles, instruction (--column instruction=question) and reference (--column "
     "reference=question)"),
    ({"id": "answer"}, "The column 'answer' would fill two roles, reference (found by its usual name) and id (--column "
                       "id=answer)"),
], ids=["taken-from-its-usual-role", "named-twice", "the-reference-as-id"])
def test_one_column_in_two_roles_is_refused_naming_how_each_role_got_it(columns, message):
    rows = Dataset.from_list([{"instruction": "What is RAG?", "question": "q", "answer": "Retrieval first."}])
    with pytest.raises(DatasetError) as error:
        validate_split(rows, _columns(**columns))
    assert str(error.value).startswith(message)
    assert "--column reference=none" in str(error.value)


def test_a_conversation_split_refuses_a_shared_column_too():
    rows = Dataset.from_list([{"id": "c1", "turns": ["Hi?", "And then?"], "reference": ["a", "b"]}])
    with pytest.raises(DatasetError, match="The column 'id' would fill two roles, reference .*and id"):
        validate_split(rows, ColumnsConfig(reference="id"))


def test_reference_none_turns_off_a_column_that_is_not_a_reference():
    # A prompt set whose `answer` column is a model's old answer, not a right one: judged on instruction and answer.
    rows = Dataset.from_list([{"instruction": "Say hi.", "answer": "hello there"}, {"instruction": "Say bye.",
                                                                                    "answer": "bye"}])
    assert validate_split(rows)[col.REFERENCE] == ["hello there", "bye"]  # found by its usual name
    for columns in (_columns(reference="none"), ColumnsConfig(reference="none"), ColumnsConfig(reference="None")):
        assert validate_split(rows, columns)[col.REFERENCE] == [None, None]
    numbered = validate_split(Dataset.from_list([{"id": None, "instruction": "q"}]), _columns(id="none"))
    assert numbered[col.ID] == ["0"]  # ids that are not ids: rows numbered instead


def test_the_instruction_cannot_be_turned_off():
    with pytest.raises(DatasetError, match=r"dataset.columns.instruction is 'none', but every row needs an instruction: "
                                           r"name its column with --column instruction=NAME"):
        validate_split(Dataset.from_list([{"instruction": "q"}]), ColumnsConfig(instruction="none"))


def test_one_order_of_reference_names_for_single_turn_and_conversation_rows():
    # `reference` first: in a results file, `answer` is the model's answer beside the reference.
    row = {"id": "r1", "instruction": "What is RAG?", "reference": "Retrieval first.", "answer": "A model's answer."}
    single = validate_split(Dataset.from_list([row]))
    conversation = {"id": "c1", "instruction": None, "reference": None, "answer": None, "turns": ["Hi?"]}
    mixed = validate_split(Dataset.from_list([{**row, "turns": None}, conversation]))
    assert single[col.REFERENCE] == ["Retrieval first."]
    assert mixed[col.REFERENCE][0] == "Retrieval first."  # the same row, read among conversations
    assert col.REFERENCE_ALIASES[0] == col.REFERENCE


def test_split_on_a_single_file_is_refused_unless_it_names_the_files_one_split(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"instruction": "q", "output": "a"}) + "\n")
    assert len(read_test_split(DatasetConfig(source=str(path), split="test"))) == 1
    for source in (str(path), "embedded"):
        with pytest.raises(DatasetError) as error:
            read_test_split(DatasetConfig(source=source, split="validation"))
        assert "--split validation (dataset.split): " in str(error.value)
        assert ("is a single file, which holds one split, read as 'test'. Leave --split out (or set dataset.split: "
                "test), or give a folder or Hub dataset that has a 'validation' split.") in str(error.value)


def test_a_missing_split_of_a_folder_names_the_flag_and_the_splits_it_has(tmp_path):
    rows = Dataset.from_list([{"instruction": "q", "output": "a"}])
    DatasetDict({"train": rows, "test": rows}).save_to_disk(tmp_path / "saved")
    (tmp_path / "repo").mkdir()
    rows.to_json(tmp_path / "repo" / "train.jsonl")
    rows.to_json(tmp_path / "repo" / "test.jsonl")
    for folder in ("saved", "repo"):
        with pytest.raises(DatasetError) as error:
            read_test_split(DatasetConfig(source=str(tmp_path / folder), split="validation"))
        assert str(error.value) == (f"Dataset '{tmp_path / folder}' has no 'validation' split (it has ['test', "
                                    f"'train']): give one of those with --split NAME (dataset.split in the config).")


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_a_file_that_is_not_utf8_is_named_with_the_byte_and_its_offset_and_read_with_its_encoding(tmp_path, suffix):
    text = ("instruction,output\nWhat is a caf\u00e9?,A place.\n" if suffix == "csv" else
            '{"instruction": "What is a caf\u00e9?", "output": "A place."}\n')
    path = tmp_path / f"latin.{suffix}"
    path.write_bytes(text.encode("latin-1"))
    offset = text.index("\u00e9")  # one byte a character before it, in either encoding
    with pytest.raises(DatasetError) as error:
        read_test_split(DatasetConfig(source=str(path)))
    line = 2 if suffix == "csv" else 1
    assert f"{path} (byte 0xe9 at offset {offset}, line {line}) is not utf-8 text. Give the file's encoding with " \
           f"--encoding NAME (dataset.encoding in the config; e.g. latin-1, cp1252, utf-16), or save it as UTF-8." \
           in str(error.value)
    assert read_test_split(DatasetConfig(source=str(path), encoding="latin-1"))[col.INSTRUCTION] == ["What is a caf\u00e9?"]


def test_an_encoding_python_does_not_know_stops_at_the_config():
    with pytest.raises(ConfigError, match="dataset.encoding: 'latin-9000' is not a text encoding Python knows"):
        apply_overrides(EvaluationConfig(), Overrides(encoding="latin-9000"))


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_a_byte_order_mark_does_not_rename_the_first_column(tmp_path, suffix):
    path = tmp_path / f"bom.{suffix}"
    if suffix == "csv":
        path.write_bytes(USERS_CSV.encode("utf-8"))
    else:
        path.write_bytes(("\ufeff" + json.dumps({"question": "What does RAG retrieve?", "gold": "Documents relevant to "
                                                  "the question.", "key": "k1"}) + "\n").encode("utf-8"))
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    # `question` found by its usual name: with the BOM kept in it, the first column would be another name.
    split = read_test_split(DatasetConfig(source=str(path), columns=_columns(reference="gold", id="key")))
    assert split[0] == {col.ID: "k1", col.INSTRUCTION: "What does RAG retrieve?",
                        col.REFERENCE: "Documents relevant to the question."}


def test_prompt_template_and_max_tokens_from_the_command_line_reach_the_run_and_a_variant_keeps_its_own():
    config = apply_overrides(EvaluationConfig(models=["smollm2-135m", "smollm2-135m@max_tokens=32"]),
                             Overrides(prompt_template="alpaca", max_tokens=64))
    assert (config.prompt.template, config.sampling.max_tokens) == ("alpaca", 64)
    assert [config.sampling_for(model).max_tokens for model in config.models] == [64, 32]
    assert apply_overrides(EvaluationConfig(), Overrides()).sampling.max_tokens == EvaluationConfig().sampling.max_tokens
