"""Human-labelled pairs files: what loads, and every bad file stopped with its file, line and fix."""

import json

import pytest

from llm_engineering.evaluation.trust.human_pairs import PairsError, load_pairs

GOOD = {"instruction": "Say hi.", "output_1": "Hi!", "output_2": "Bye.", "label": 1}


def _jsonl(tmp_path, records, name="pairs.jsonl"):
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def test_jsonl_and_csv_pairs_load_with_ids_labels_and_references(tmp_path):
    path = _jsonl(tmp_path, [GOOD, "", {**GOOD, "id": 7, "label": 0, "reference": "Hello."}])
    pairs = load_pairs(path)
    assert [(p.id, p.label, p.reference, p.line) for p in pairs] == [("line-1", "A", None, 1), ("7", "tie", "Hello.", 3)]
    csv = tmp_path / "pairs.csv"
    csv.write_text('id,instruction,output_1,output_2,label\na,"Say hi, please.","Hi,\nthere",Bye.,2\nb,x,y,z,1\n')
    pairs = load_pairs(csv, limit=1)
    assert [(p.id, p.instruction, p.output_1, p.label) for p in pairs] == [("a", "Say hi, please.", "Hi,\nthere", "B")]


@pytest.mark.parametrize("records, line, words", [
    ([GOOD, {k: v for k, v in GOOD.items() if k != "output_2"}], 2, "missing output_2"),
    ([{**GOOD, "label": 3}], 1, "label 3 is not 1, 2 or 0"),
    ([{**GOOD, "label": "first"}], 1, "label 'first' is not 1, 2 or 0 (or A, B, tie)"),
    ([GOOD, GOOD, {**GOOD, "output_1": "  "}], 3, "output_1 is empty"),
    ([{**GOOD, "id": "x"}, {**GOOD, "id": "x"}], 2, "id 'x' is also on line 1"),
    ([GOOD, '{"instruction": "cut off'], 2, "not valid JSON"),
    (["[1, 2]"], 1, "a pair is a JSON object, got list"),
])
def test_a_bad_pairs_file_names_the_file_the_line_and_the_fix(tmp_path, records, line, words):
    path = _jsonl(tmp_path, records)
    with pytest.raises(PairsError) as error:
        load_pairs(path, limit=1)  # the whole file is checked, not only the pairs asked for
    assert str(error.value).startswith(f"{path}, line {line}: ") and words in str(error.value)


def test_files_that_hold_no_pairs_are_named(tmp_path):
    with pytest.raises(PairsError, match="no such file"):
        load_pairs(tmp_path / "missing.jsonl")
    with pytest.raises(PairsError, match="no pairs in the file"):
        load_pairs(_jsonl(tmp_path, [""]))
    with pytest.raises(PairsError, match="read from .jsonl or .csv"):
        load_pairs(_jsonl(tmp_path, [GOOD], name="pairs.json"))
    short = tmp_path / "short.csv"
    short.write_text("instruction,output_1,output_2,label\nx,y,1\n")
    with pytest.raises(PairsError, match=r"short.csv, line 2: fewer fields"):
        load_pairs(short)
