"""A Hub dataset id as the pipeline's dataset source, at a revision: `read_test_split` against the Hub
stub, with a repo pushed twice by the real `datasets` client (two commits, same file, other rows)."""

import pytest
from datasets import Dataset
from datasets.exceptions import DatasetNotFoundError

from llm_engineering.evaluation.config import DatasetConfig
from llm_engineering.evaluation.generation.dataset import DatasetError, read_test_split
from tests.support.hub_stub import TOKEN, USER

REPO = f"{USER}/my-eval"
FIRST = {"instruction": ["What is RAG?", "Define LoRA."], "output": ["Retrieval-augmented generation.", "Low-rank adapters."]}
SECOND = {"instruction": ["What is ZenML?", "What is QLoRA?", "What is a vector DB?"],
          "output": ["An MLOps framework.", "LoRA on a 4-bit model.", "A store searched by embedding."]}


def as_split(rows):
    """What read_test_split makes of pushed rows: numbered ids, `output` as the reference."""
    return {"id": [str(n) for n in range(len(rows["instruction"]))], "instruction": rows["instruction"],
            "reference": rows["output"]}


@pytest.fixture
def two_commits(hub):
    first = Dataset.from_dict(FIRST).push_to_hub(REPO, split="test", token=TOKEN)
    second = Dataset.from_dict(SECOND).push_to_hub(REPO, split="test", token=TOKEN)
    assert first.oid != second.oid and hub.state.repos[REPO]["sha"] == second.oid
    # The same data file at both commits: only the revision tells the two row sets apart.
    old, new = hub.state.files(REPO, first.oid), hub.state.files(REPO)
    assert old.keys() == new.keys() and any(path.endswith(".parquet") and old[path] != new[path] for path in old)
    return first.oid, second.oid


def test_a_commit_sha_reads_the_rows_of_that_commit(two_commits):
    first, _ = two_commits
    assert read_test_split(DatasetConfig(source=REPO, revision=first)).to_dict() == as_split(FIRST)


def test_without_a_revision_or_at_main_the_newest_commit_is_read(two_commits):
    assert read_test_split(DatasetConfig(source=REPO)).to_dict() == as_split(SECOND)
    assert read_test_split(DatasetConfig(source=REPO, revision="main")).to_dict() == as_split(SECOND)
    assert read_test_split(DatasetConfig(source=REPO, limit=1)).to_dict() == as_split(
        {key: values[:1] for key, values in SECOND.items()})


@pytest.mark.parametrize("revision", ["v9-no-such-tag", "0" * 40])
def test_a_wrong_revision_is_a_dataset_error_naming_the_dataset_and_the_revision(two_commits, revision):
    with pytest.raises(DatasetError) as error:
        read_test_split(DatasetConfig(source=REPO, revision=revision))
    message = str(error.value)
    # The cause in `datasets`' own words, and the fix: the setting to check.
    assert message.startswith(f"Cannot read dataset {REPO!r} at revision {revision!r}:")
    assert f"Revision '{revision}' doesn't exist" in message and "dataset.revision" in message
    assert isinstance(error.value.__cause__, DatasetNotFoundError)


def test_a_split_the_hub_dataset_lacks_names_the_splits_it_has_and_the_flag(two_commits):
    with pytest.raises(DatasetError) as error:
        read_test_split(DatasetConfig(source=REPO, split="validation"))
    assert str(error.value) == (f"Dataset {REPO!r} has no 'validation' split (it has ['test']): give one of those with "
                                f"--split NAME (dataset.split in the config).")
