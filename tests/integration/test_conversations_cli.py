"""Two-turn conversations through the CLI (`run_cli`): the session's engine answers every first turn, then every
second turn with its own first answer in the prompt; the OpenAI-compatible stub judges each turn with the
conversation before it; the summary has each turn's means. `rescore` runs no generation; `--samples 2` follows each
sample's own first answer and resumes the first samples. A CLI of its own, killed (SIGKILL) during the second turns,
resumes every first turn and every second turn it saved, and generates the rest once.)"""

import json
import signal
import time

import pytest
import yaml

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.conversation import CONVERSATION_INTRO
from llm_engineering.infrastructure.zenml_runs import step_output
from tests.support.cli_output import json_report
from tests.support.cli_process import group_gone, saved_answers, start_cli
from tests.support.configs import stub_judged
from tests.support.openai_stub import OpenAIStub

# Second turns that only the model's own first answer can answer.
CONVERSATIONS = [
    {"question_id": "number", "category": "memory",
     "turns": ["Pick a random number between 1 and 9 and say only the number.",
               "Repeat exactly the number you said before."]},
    {"question_id": "colour", "category": "memory",
     "turns": ["Name one colour and say only its name.", "Repeat exactly the colour you named before."],
     "reference": ["Blue.", None]},
]


def _run(result):
    from zenml.client import Client

    assert result.exit_code == 0, result.output[-3000:]
    report = json_report(result.stdout)
    return Client().get_pipeline_run(report["run"]), report


def _second_turns_follow_their_first(generations):
    rows = {(r[col.ID], r[col.SAMPLE]): r for r in generations.to_list()}
    for row in rows.values():
        if row[col.TURN] == 2:
            first = rows[(f"{row[col.CONVERSATION_ID]}/turn-1", row[col.SAMPLE])]
            assert row[col.HISTORY] == [{"role": "user", "content": first[col.INSTRUCTION]},
                                        {"role": "assistant", "content": first[col.ANSWER]}]
            # the model's chat template, the first answer in it before the second question
            assert row[col.PROMPT].startswith("<|im_start|>")
            assert row[col.PROMPT].index(first[col.ANSWER]) < row[col.PROMPT].index(row[col.INSTRUCTION])


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_turn_rows_are_answered_turn_by_turn_judged_and_summarized_per_turn(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("CHECKPOINT_DIR", str(tmp_path / "checkpoints"))
    data = tmp_path / "conversations.jsonl"
    data.write_text("\n".join(json.dumps(row) for row in CONVERSATIONS) + "\n")
    with OpenAIStub() as judge:
        config = stub_judged(tmp_path / "run.yaml", judge.base_url, rows=2, max_tokens=12)

        # 1. Every turn answered, the second after the model's own first answer; each turn judged with its conversation.
        result = run_cli("evaluate", "--config", config, "--dataset", data, "--no-cache")
        run, report = _run(result)
        generations = step_output(run, "generate_answers", col.GENERATIONS)
        assert generations[col.ID] == ["number/turn-1", "number/turn-2", "colour/turn-1", "colour/turn-2"]
        _second_turns_follow_their_first(generations)
        stats = step_output(run, "generate_answers", col.GENERATION_STATS)
        assert (stats.rows, stats.generated, stats.resumed) == (4, 4, 0)
        evaluations = step_output(run, "evaluate_answers", col.EVALUATIONS)
        assert evaluations[col.JUDGE_ERROR] == [None] * 4
        prompts = [request["body"]["messages"][-1]["content"] for request in judge.state.requests]
        second = generations[1]
        assert sum(CONVERSATION_INTRO in p for p in prompts) == 2  # the second turns'
        assert any(f"### Assistant:\n{second[col.HISTORY][1]['content']}\n\n### User:\n{second[col.INSTRUCTION]}" in p
                   for p in prompts)
        (model,) = report["models"]
        assert [(t["turn"], t["rows"], t["scored"]) for t in model["turns"]] == [(1, 2, 2), (2, 2, 2)]
        assert model["turns"][0]["criteria"][0]["mean"] == 3.0  # the stub's verdict, per turn
        assert "Per turn of the conversations" in result.stdout

        # 2. Rescoring judges the stored turns again: no generation step, the same turns.
        requests = len(judge.state.requests)
        rescored, report = _run(run_cli("rescore", "--config", config, "--no-cache"))
        assert "generate_answers" not in rescored.steps
        assert len(judge.state.requests) == requests + 4
        assert [t["turn"] for t in report["models"][0]["turns"]] == [1, 2]

        # 3. Two answers per prompt: the first samples resumed, each second sample's turn 2 after its own turn 1.
        sampled, report = _run(run_cli("evaluate", "--config", config, "--dataset", data, "--samples", "2"))
        stats = step_output(sampled, "generate_answers", col.GENERATION_STATS)
        assert (stats.resumed, stats.generated, stats.samples) == (4, 4, 2)
        more = step_output(sampled, "generate_answers", col.GENERATIONS)
        assert more[col.SAMPLE] == [0, 1] * 4
        _second_turns_follow_their_first(more)
        assert [(t["turn"], t["rows"]) for t in report["models"][0]["turns"]] == [(1, 4), (2, 4)]


TOPICS = ["fruit", "colour", "animal", "city", "tree", "bird"]
# Second turns long enough (and one at a time) that the kill lands while they are being generated.
SLOW_SECOND_TURNS = [{"question_id": topic, "turns": [f"Name one {topic} and say only its name.",
                                                       f"Repeat the {topic} you named, then describe it in detail."]}
                     for topic in TOPICS]


def _saved_turns(checkpoints):
    """(id, sample, answer) of each answer saved in the run's checkpoint file(s)."""
    return [(row["id"], row["sample"], row["answer"]) for row in saved_answers(checkpoints.glob("*.jsonl"))]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_kill_during_the_second_turns_resumes_both_turns_and_generates_the_rest_once(
        run_cli, repo_root, tmp_path, monkeypatch):
    checkpoints = tmp_path / "checkpoints"
    monkeypatch.setenv("CHECKPOINT_DIR", str(checkpoints))
    data = tmp_path / "conversations.jsonl"
    data.write_text("\n".join(json.dumps(row) for row in SLOW_SECOND_TURNS) + "\n")
    with OpenAIStub() as judge:
        config = stub_judged(tmp_path / "run.yaml", judge.base_url, rows=len(TOPICS), max_tokens=64)
        one_at_a_time = tmp_path / "one-at-a-time.yaml"  # max_num_seqs: no part of the checkpoint's key
        parameters = yaml.safe_load(config.read_text())
        parameters["parameters"]["engine"] = {"max_num_seqs": 1}
        one_at_a_time.write_text(yaml.safe_dump(parameters))

        # 1. The CLI in its own process (its own engine), killed once a second turn is saved.
        with open(tmp_path / "killed.log", "w") as log:
            process = start_cli(repo_root, ["evaluate", "--config", one_at_a_time, "--dataset", data], log)
            deadline = time.monotonic() + 400
            while not [row for row in _saved_turns(checkpoints) if row[0].endswith("/turn-2")]:
                assert process.poll() is None, (tmp_path / "killed.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "no second turn saved"
                time.sleep(0.05)
            process.kill()
            assert process.wait(timeout=60) == -signal.SIGKILL
        assert group_gone(process.pid, timeout=10)
        before = _saved_turns(checkpoints)
        seconds = [row for row in before if row[0].endswith("/turn-2")]
        assert len(before) - len(seconds) == len(TOPICS) and 1 <= len(seconds) < len(TOPICS)

        # 2. The command again, in this process: the saved turns resumed, the missing second turns generated, once.
        run, _ = _run(run_cli("evaluate", "--config", config, "--dataset", data))
    stats = step_output(run, "generate_answers", col.GENERATION_STATS)
    assert (stats.resumed, stats.generated) == (len(before), 2 * len(TOPICS) - len(before))
    generations = step_output(run, "generate_answers", col.GENERATIONS)
    kept = {(i, s): a for i, s, a in zip(generations[col.ID], generations[col.SAMPLE], generations[col.ANSWER])}
    assert all(kept[i, s] == answer for i, s, answer in before)  # the saved answers, not generated again
    _second_turns_follow_their_first(generations)
    after = _saved_turns(checkpoints)
    assert sorted((i, s) for i, s, _ in after) == sorted(kept)  # every turn saved once
