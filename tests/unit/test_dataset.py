import json

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import ColumnsConfig, DatasetConfig, PromptConfig
from llm_engineering.evaluation.generation.dataset import (
    DatasetError,
    read_test_split,
    validate_split,
    with_prompts,
)
from llm_engineering.evaluation.generation.source import embedded_split_path


def write_jsonl(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


ROWS = [{"instruction": f"Explain topic {i}.", "output": f"Topic {i} is explained."} for i in range(12)]


def test_embedded_split_is_a_valid_test_split_of_at_least_40_rows():
    split = read_test_split(DatasetConfig())
    assert len(split) >= 40
    assert split.column_names == [col.ID, col.INSTRUCTION, col.REFERENCE, col.CATEGORY]  # its rows' topics
    assert len(set(split[col.ID])) == len(split) and None not in split[col.CATEGORY]


@pytest.mark.parametrize("suffix", ["jsonl", "json", "parquet", "csv"])
def test_local_files_load_with_output_as_reference(tmp_path, suffix):
    dataset = Dataset.from_list(ROWS)
    path = tmp_path / f"data.{suffix}"
    {"jsonl": lambda: dataset.to_json(str(path)), "json": lambda: dataset.to_json(str(path)),
     "parquet": lambda: dataset.to_parquet(str(path)), "csv": lambda: dataset.to_csv(str(path), index=False)}[suffix]()
    split = read_test_split(DatasetConfig(source=str(path), limit=5))
    assert len(split) == 5
    assert split[0][col.REFERENCE] == "Topic 0 is explained."
    assert split[col.ID] == ["0", "1", "2", "3", "4"]


def test_save_to_disk_folder_with_test_split(tmp_path):
    from datasets import DatasetDict

    DatasetDict({"test": Dataset.from_list(ROWS), "train": Dataset.from_list(ROWS[:2])}).save_to_disk(tmp_path / "d")
    assert len(read_test_split(DatasetConfig(source=str(tmp_path / "d")))) == 12
    with pytest.raises(DatasetError, match="no 'validation' split"):
        read_test_split(DatasetConfig(source=str(tmp_path / "d"), split="validation"))


def test_dummy_mode_keeps_ten_rows_and_limit_wins_when_smaller(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", ROWS)
    assert len(read_test_split(DatasetConfig(source=str(path), dummy=True))) == 10
    assert len(read_test_split(DatasetConfig(source=str(path), dummy=True, limit=3))) == 3


@pytest.mark.parametrize(
    "rows, message",
    [
        ([{"question_text": "q", "output": "a"}], r"no instruction column: .*found \['question_text', 'output'\]\. "
                                                   r"Name yours with --column instruction=NAME"),
        ([{"instruction": "  ", "answer": "a"}], "empty or non-text 'instruction'"),
        ([{"instruction": "q", "answer": ["a"]}], "'answer' is list, not text"),
        ([{"id": 1, "instruction": "q", "answer": "a"}, {"id": 1, "instruction": "r", "answer": "b"}], "duplicate ids"),
        ([{"id": "a", "instruction": "q", "answer": "a"}, {"instruction": "r", "answer": "b"}], r"row 1: no id"),
        ([{"instruction": 3, "answer": "a"}], "empty or non-text 'instruction'"),
    ],
)
def test_bad_rows_are_rejected_with_the_fix(rows, message):
    with pytest.raises(DatasetError, match=message):
        validate_split(Dataset.from_list(rows))


def test_rows_without_a_reference_are_kept_with_none_per_row():
    # No reference column at all (a prompt set), and a column where some rows are empty or null.
    alone = validate_split(Dataset.from_list([{"id": "a", "prompt": "Say hi."}, {"id": "b", "prompt": "Say bye."}]))
    assert alone[col.REFERENCE] == [None, None] and alone[col.INSTRUCTION] == ["Say hi.", "Say bye."]
    mixed = validate_split(Dataset.from_list([{"instruction": "q1", "answer": "a1"}, {"instruction": "q2", "answer": ""},
                                              {"instruction": "q3", "answer": None}]))
    assert mixed[col.REFERENCE] == ["a1", None, None]
    numbers = validate_split(Dataset.from_list([{"instruction": "2 + 40?", "answer": 42}]))
    assert numbers[col.REFERENCE] == ["42"]  # a number (a math answer) as text


def test_columns_named_in_the_config_are_read_and_a_missing_one_lists_what_was_found():
    rows = Dataset.from_list([{"qid": "x1", "question_text": "Explain RAG.", "gold": "Retrieval first.", "answer": "no"}])
    split = validate_split(rows, ColumnsConfig(id="qid", instruction="question_text", reference="gold"))
    assert (split[0][col.ID], split[0][col.INSTRUCTION], split[0][col.REFERENCE]) == ("x1", "Explain RAG.", "Retrieval first.")
    with pytest.raises(DatasetError, match=r"dataset.columns.reference names the column 'golden', but the test split has "
                                           r"\['qid', 'question_text', 'gold', 'answer'\]: set dataset.columns.reference "
                                           r"\(or --column reference=NAME\)"):
        validate_split(rows, ColumnsConfig(instruction="question_text", reference="golden"))


def test_a_rubric_that_needs_references_stops_at_load_naming_the_rows(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"id": "r1", "instruction": "q1", "output": "a1"}\n{"id": "r2", "instruction": "q2"}\n')
    assert read_test_split(DatasetConfig(source=str(path)))[col.REFERENCE] == ["a1", None]
    with pytest.raises(DatasetError, match=r"1 of 2 rows have no reference answer \(ids \['r2'\]\), but rubric "
                                           r"'reference-guided' judges against one"):
        read_test_split(DatasetConfig(source=str(path)), reference_required_by="reference-guided")


def test_empty_split_is_rejected(tmp_path):
    with pytest.raises(DatasetError, match="empty"):
        validate_split(Dataset.from_dict({"instruction": [], "answer": []}))


def test_missing_and_unsupported_files_are_named(tmp_path):
    with pytest.raises(DatasetError, match="not found"):
        read_test_split(DatasetConfig(source=str(tmp_path / "missing.jsonl")))
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(DatasetError, match="unsupported file type"):
        read_test_split(DatasetConfig(source=str(tmp_path / "notes.txt")))
    (tmp_path / "broken.jsonl").write_text("{not json\n")
    with pytest.raises(DatasetError, match="Cannot read"):
        read_test_split(DatasetConfig(source=str(tmp_path / "broken.jsonl")))
    # A file cut off mid-row: the parser's own reason is shown, not the datasets wrapper's.
    (tmp_path / "cut.jsonl").write_text('{"instruction": "a", "output": "b"}\n{"instruction": "c", "outp')
    with pytest.raises(DatasetError, match=r"Cannot read .*cut.jsonl' \((?!DatasetGenerationError)\w+Error: .+\)"):
        read_test_split(DatasetConfig(source=str(tmp_path / "cut.jsonl")))


def test_prompts_use_the_alpaca_template_or_keep_the_instruction_for_chat():
    split = validate_split(Dataset.from_list(ROWS[:2]))
    alpaca = with_prompts(split, PromptConfig())
    assert alpaca[0][col.PROMPT].startswith("Below is an instruction that describes a task.")
    assert alpaca[0][col.PROMPT].endswith("### Instruction:\nExplain topic 0.\n\n### Response:\n")
    assert with_prompts(split, PromptConfig(template="chat"))[0][col.PROMPT] == "Explain topic 0."


def test_embedded_file_ships_with_the_package():
    assert embedded_split_path().is_file()


@pytest.mark.timeout(20)
def test_a_cause_chain_that_loops_still_names_a_cause(tmp_path, monkeypatch):
    from llm_engineering.evaluation.generation import source

    inner, outer = OSError("disk gone"), RuntimeError("generation failed")
    inner.__cause__, outer.__cause__ = outer, inner  # each the other's cause

    def load(*args, **kwargs):
        raise outer

    monkeypatch.setattr(source, "load_dataset", load)
    path = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    with pytest.raises(DatasetError, match=r"\(OSError: disk gone\)"):
        read_test_split(DatasetConfig(source=str(path)))
