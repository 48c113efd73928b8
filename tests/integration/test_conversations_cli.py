"""Two-turn conversations through the CLI (`run_cli`): the session's engine answers every first turn, then every
second turn with its own first answer in the prompt; the OpenAI-compatible stub judges each turn with the
conversation before it; the summary has each turn's means. `rescore` runs no generation; `--samples 2` follows each
sample's own first answer and resumes the first samples. (A kill during the second turns: `test_resume.py`, step 3.)"""

import json

import pytest

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.conversation import CONVERSATION_INTRO
from llm_engineering.infrastructure.zenml_runs import step_output
from tests.support.cli_output import reported_run
from tests.support.configs import stub_judged
from tests.support.conversations import assert_second_turns_follow_their_first
from tests.support.openai_stub import VERDICT, OpenAIStub

# Second turns that only the model's own first answer can answer.
CONVERSATIONS = [
    {"question_id": "number", "category": "memory",
     "turns": ["Pick a random number between 1 and 9 and say only the number.",
               "Repeat exactly the number you said before."]},
    {"question_id": "colour", "category": "memory",
     "turns": ["Name one colour and say only its name.", "Repeat exactly the colour you named before."],
     "reference": ["Blue.", None]},
]
# The stub scores each second turn's accuracy 1 (its prompt holds "Repeat exactly"), each first turn's 3 (VERDICT).
SECOND_TURN_VERDICT = {**VERDICT, "accuracy": {"analysis": "It did not repeat it.", "score": 1}}



@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_turn_rows_are_answered_turn_by_turn_judged_and_summarized_per_turn(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("CHECKPOINT_DIR", str(tmp_path / "checkpoints"))
    data = tmp_path / "conversations.jsonl"
    data.write_text("\n".join(json.dumps(row) for row in CONVERSATIONS) + "\n")
    with OpenAIStub() as judge:
        judge.state.verdict_when = [("Repeat exactly", SECOND_TURN_VERDICT)]
        config = stub_judged(tmp_path / "run.yaml", judge.base_url, rows=2, max_tokens=12)

        # 1. Every turn answered, the second after the model's own first answer; each turn judged with its conversation.
        result = run_cli("evaluate", "--config", config, "--dataset", data, "--no-cache")
        run, report = reported_run(result)
        generations = step_output(run, "generate_answers", col.GENERATIONS)
        assert generations[col.ID] == ["number/turn-1", "number/turn-2", "colour/turn-1", "colour/turn-2"]
        assert_second_turns_follow_their_first(generations)
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
        assert [t["criteria"][0]["mean"] for t in model["turns"]] == [3.0, 1.0]  # each turn's own verdicts
        assert "Per turn of the conversations" in result.stdout

        # 2. Rescoring judges the stored turns again: no generation step, the same turns.
        requests = len(judge.state.requests)
        result = run_cli("rescore", "--config", config, "--no-cache")
        assert f"Re-scoring 1 stored artifact(s) of run {run.name}" in result.stdout, result.output[-3000:]
        rescored, report = reported_run(result)
        assert "generate_answers" not in rescored.steps
        assert len(judge.state.requests) == requests + 4
        assert [t["turn"] for t in report["models"][0]["turns"]] == [1, 2]

        # 3. Two answers per prompt: the first samples resumed, each second sample's turn 2 after its own turn 1.
        sampled, report = reported_run(run_cli("evaluate", "--config", config, "--dataset", data, "--samples", "2"))
        stats = step_output(sampled, "generate_answers", col.GENERATION_STATS)
        assert (stats.resumed, stats.generated, stats.samples) == (4, 4, 2)
        more = step_output(sampled, "generate_answers", col.GENERATIONS)
        assert more[col.SAMPLE] == [0, 1] * 4
        assert_second_turns_follow_their_first(more)
        assert [(t["turn"], t["rows"]) for t in report["models"][0]["turns"]] == [(1, 4), (2, 4)]

