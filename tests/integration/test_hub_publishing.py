"""Publishing to the Hub through the real `huggingface_hub` client, against a Hub stub on 127.0.0.1."""

import hashlib
import io
import socket

import pyarrow.parquet as pq
import pytest
from datasets import Dataset, load_dataset
from huggingface_hub import DatasetCard

from llm_engineering.evaluation import columns as col
from llm_engineering.infrastructure.hub import PublishError, hub_workspace, load_published, push_results
from tests.support.hub_stub import TOKEN, USER


def judged_rows():
    return Dataset.from_dict({
        col.ID: ["a", "b"], col.INSTRUCTION: ["i1", "i2"], col.ANSWER: ["x", "y"], col.MODEL_ID: ["m", "m"],
        col.JUDGE_MODEL: ["vllm:judge"] * 2, col.score("accuracy"): [3, 1], col.score("style"): [2, 2],
        col.JUDGE_ERROR: [None, None], col.COMPLETION_TOKENS: [5, 6], col.FINISH_REASON: ["stop", "stop"],
    })


def test_push_then_load_dataset_returns_identical_rows_and_the_card(hub):
    from llm_engineering.evaluation.report.results_card import score_facts
    from llm_engineering.evaluation.report.summary import model_scores

    rows = judged_rows()
    repo = f"{hub_workspace(TOKEN, None)}/m-results"
    assert repo == f"{USER}/m-results"
    info = {"model": "m", "pipeline run": "run-1", **score_facts(model_scores(rows), rows[0][col.JUDGE_MODEL])}
    url = push_results(rows, repo, token=TOKEN, split="test", info=info)
    assert url.endswith(f"/datasets/{repo}")
    assert hub.state.repos[repo]["private"] is True

    # The parquet file went through git-lfs, as on the real Hub: batch API, then a PUT of the bytes
    # to the upload URL it handed out; the commit names the file by pointer (sha256 + size) only.
    # The card is text and travels inline.
    (commit,) = hub.state.commits
    operations = {op["value"]["path"]: op for op in commit if op["key"] != "header"}
    parquet_path = next(path for path in operations if path.endswith(".parquet"))
    parquet = hub.state.files(repo)[parquet_path]
    oid = hashlib.sha256(parquet).hexdigest()
    assert operations[parquet_path] == {"key": "lfsFile", "value": {
        "path": parquet_path, "algo": "sha256", "oid": oid, "size": len(parquet)}}
    assert hub.state.lfs_uploads == {oid: parquet}
    assert pq.read_table(io.BytesIO(parquet)).to_pylist() == rows.to_list()
    assert ("POST", f"/datasets/{repo}.git/info/lfs/objects/batch") in hub.state.calls
    assert ("PUT", f"/lfs-upload/{oid}") in hub.state.calls
    assert operations["README.md"]["key"] == "file" and operations["README.md"]["value"]["content"]

    loaded = load_dataset(repo, split="test", token=TOKEN)
    assert loaded.to_list() == rows.to_list()
    card = DatasetCard(hub.state.files(repo)["README.md"].decode())
    assert "run-1" in card.text and "vllm:judge" in card.text and "accuracy 2.0" in card.text
    assert card.data.configs[0]["data_files"][0]["split"] == "test"
    # A second push (the evaluations after the generations) replaces the rows in place.
    push_results(rows.select([0]), repo, token=TOKEN, split="test", info={"model": "m"})
    assert load_published(repo, "test", TOKEN).to_list() == rows.select([0]).to_list()


@pytest.mark.parametrize("status, words", [(401, "HUGGINGFACE_ACCESS_TOKEN"), (403, "write token"), (500, "try again")])
def test_hub_errors_name_the_repo_the_cause_and_the_fix(hub, status, words):
    hub.state.fail_status = status
    with pytest.raises(PublishError) as error:
        push_results(judged_rows(), f"{USER}/m-results", token=TOKEN, split="test", info={})
    message = str(error.value)
    assert f"{USER}/m-results" in message and f"HTTP {status}" in message and words in message
    assert "python tools/run.py publish" in message


def test_wrong_token_is_refused(hub):
    with pytest.raises(PublishError, match="HTTP 401"):
        hub_workspace("hf_wrong", None)


def test_hub_down_is_a_clear_error(monkeypatch):
    from huggingface_hub import constants

    with socket.socket() as sock:  # a loopback port that nothing listens on once the socket closes
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    monkeypatch.setattr(constants, "ENDPOINT", dead)
    with pytest.raises(PublishError, match=f"{dead} could not be reached"):
        push_results(judged_rows(), f"{USER}/m-results", token=TOKEN, split="test", info={})
