"""Conversations: the row formats (`turns`, `messages`) and their bad rows, turn-by-turn generation with the model's
own earlier answers in each prompt, its checkpoint across a kill during turn 2, and what the judge and the summary
read of each turn. The engine is a stand-in: what is under test is the logic around it."""

import json

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import DatasetConfig, PromptConfig, SamplingConfig
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.generation.answers import answer_test_split
from llm_engineering.evaluation.generation.checkpoint import AnswerCheckpoint, AnswerRecord
from llm_engineering.evaluation.generation.dataset import DatasetError, read_test_split, validate_split, with_prompts
from llm_engineering.evaluation.generation.prompts import alpaca_conversation, alpaca_prompt
from llm_engineering.evaluation.judging.conversation import CONVERSATION_INTRO, turn_pair
from llm_engineering.evaluation.judging.rubric import judge_messages, load_rubric
from llm_engineering.evaluation.report.html import render_html
from llm_engineering.evaluation.report.summary import model_scores
from llm_engineering.evaluation.report.turns_text import pairwise_turn_rows, turn_rows

TWO_TURNS = [
    {"question_id": 81, "category": "writing", "turns": ["Pick a number from 1 to 9.", "Repeat the number you said."],
     "reference": ["Any number from 1 to 9.", None]},
    {"question_id": 82, "category": "roleplay", "turns": ["Name a colour.", "Name a fruit of that colour."]},
    {"question_id": 83, "category": "math", "turns": ["What is 2 + 3?", "Multiply your answer by 4."],
     "reference": ["5", "20"]},
]


def write_jsonl(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _split(tmp_path, rows=TWO_TURNS, **dataset):
    path = write_jsonl(tmp_path / "conversations.jsonl", rows)
    return with_prompts(read_test_split(DatasetConfig(source=str(path), **dataset)), PromptConfig())


def test_turns_rows_become_a_row_per_turn_with_the_conversation_before_it(tmp_path):
    split = _split(tmp_path)
    assert split[col.ID] == ["81/turn-1", "81/turn-2", "82/turn-1", "82/turn-2", "83/turn-1", "83/turn-2"]
    assert split[col.CONVERSATION_ID] == ["81", "81", "82", "82", "83", "83"] and split[col.TURN] == [1, 2] * 3
    assert split[col.REFERENCE] == ["Any number from 1 to 9.", None, None, None, "5", "20"]
    second = split[1]
    assert second[col.INSTRUCTION] == "Repeat the number you said."
    # the assistant's content is the model's own answer, filled in at generation
    assert second[col.HISTORY] == [{"role": "user", "content": "Pick a number from 1 to 9."},
                                   {"role": "assistant", "content": None}]
    assert split[0][col.HISTORY] == [] and split[0][col.PROMPT] == alpaca_prompt("Pick a number from 1 to 9.")


def test_messages_rows_answer_the_last_user_message_after_the_given_turns(tmp_path):
    rows = [{"id": "c1", "messages": [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "What did you say?"}],
        "reference": "Hello."}]
    (row,) = _split(tmp_path, rows).to_list()
    assert (row[col.ID], row[col.TURN], row[col.INSTRUCTION], row[col.REFERENCE]) == ("c1", 2, "What did you say?", "Hello.")
    assert [m["role"] for m in row[col.HISTORY]] == ["system", "user", "assistant"]


def test_one_turn_rows_beside_conversations_keep_their_id_and_are_first_turns(tmp_path):
    rows = [{"id": "q1", "instruction": "Explain LoRA.", "output": "Low-rank adapters."},
            {"id": "c2", "turns": ["Name a colour.", "And another?"]}]
    split = _split(tmp_path, rows)
    assert split[col.ID] == ["q1", "c2/turn-1", "c2/turn-2"]
    assert split[0][col.REFERENCE] == "Low-rank adapters." and split[0][col.TURN] == 1
    # MT-Bench's rows name their id question_id: one file may hold both, each row its own.
    rows[1] = {"question_id": 81, "turns": ["Name a colour.", "And another?"]}
    assert _split(tmp_path, rows)[col.ID] == ["q1", "81/turn-1", "81/turn-2"]


def test_a_one_turn_split_loads_as_before(tmp_path):
    split = _split(tmp_path, [{"instruction": "Explain LoRA.", "output": "Low-rank adapters."}])
    assert split.column_names == [col.ID, col.INSTRUCTION, col.REFERENCE, col.PROMPT]


def test_the_limit_counts_conversations_and_keeps_every_turn(tmp_path):
    assert _split(tmp_path, limit=2)[col.ID] == ["81/turn-1", "81/turn-2", "82/turn-1", "82/turn-2"]


@pytest.mark.parametrize("row, message", [
    ({"id": "a", "turns": ["Hi.", "  "]}, r"row 0 \(id a\): turn 2 is empty or not text: write the user's message"),
    ({"id": "a", "turns": []}, r"row 0 \(id a\): 'turns' must be a non-empty list"),
    ({"id": "a", "turns": ["Hi.", "Bye."], "reference": ["x"]},
     r"row 0 \(id a\): 'reference' has 1 item\(s\) for 2 turns: give a list of one reference per turn"),
    ({"id": "a", "turns": ["Hi.", "Bye."], "reference": ["x", ""]}, r"the reference of turn 2 is empty"),
    ({"id": "a", "messages": [{"role": "user", "content": "Hi."}, {"role": "user", "content": "Again?"}]},
     r"row 0 \(id a\): message 2 is 'user' where 'assistant' belongs: the roles go: an optional system message"),
    ({"id": "a", "messages": [{"role": "assistant", "content": "Hi."}, {"role": "user", "content": "Hm?"}]},
     r"message 1 is 'assistant' where 'user' belongs"),
    ({"id": "a", "messages": [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}]},
     r"the last message is 'assistant': the roles go.*ending with the user message to answer"),
    ({"id": "a", "messages": [{"role": "robot", "content": "Hi."}]}, r"message 1 has role 'robot': give each message"),
    ({"id": "a", "messages": [{"role": "user", "content": ""}]}, r"message 1 \(user\) is empty or not text"),
    ({"id": None, "turns": ["Hi."]}, r"row 0: no id; give every row an id"),
])
def test_bad_conversation_rows_name_the_row_and_the_fix(row, message):
    with pytest.raises(DatasetError, match=message):
        validate_split(Dataset.from_list([row]))


def test_a_turn_id_given_twice_is_refused():
    rows = [{"id": "a/turn-1", "turns": None, "instruction": "Hi.", "output": "Hello."},
            {"id": "a", "turns": ["Hi.", "Bye."], "instruction": None, "output": None}]
    with pytest.raises(DatasetError, match=r"duplicate ids \['a/turn-1'\]"):
        validate_split(Dataset.from_list(rows))


class _ChatTokenizer:
    chat_template = "stand-in"

    def __call__(self, prompts, add_special_tokens=False):
        return {"input_ids": [[0] * len(p.split()) for p in prompts]}

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
        return "".join(f"<{m['role']}>{m['content']}</{m['role']}>" for m in messages) + "<assistant>"


class _Engine:
    """Answers each prompt with a numbered text; after `stop_after` answers it dies (a kill: what it answered before
    is what the checkpoint holds). Records every prompt it was asked, per `generate` call."""

    def __init__(self, stop_after=None):
        self.calls, self.done, self.stop_after = [], [], stop_after

    def get_tokenizer(self):
        return _ChatTokenizer()

    def generate(self, prompts, sampling, samples=None):
        self.calls.append(dict(prompts))
        for u, prompt in prompts.items():
            if self.stop_after is not None and len(self.done) >= self.stop_after:
                raise KeyboardInterrupt("killed")
            self.done.append(prompt)
            yield u, AnswerRecord(answer=f"answer {len(self.done)} (sample {(samples or {}).get(u, 0)})",
                                  finish_reason="stop", prompt_tokens=3, completion_tokens=2)

    def close(self):
        pass


def _answer(engine, split, n=1, checkpoint=None):
    return answer_test_split(engine, split, "org/model", sampling=SamplingConfig(n=n), prompt=PromptConfig(),
                             max_model_len=2048, checkpoint=checkpoint)


def test_first_turns_go_in_one_call_then_second_turns_with_the_models_own_first_answers(tmp_path):
    engine = _Engine()
    generations, stats = _answer(engine, _split(tmp_path))
    assert [len(call) for call in engine.calls] == [3, 3]  # every first turn at once, then every second turn
    rows = generations.to_list()
    first, second = rows[0], rows[1]
    assert second[col.HISTORY] == [{"role": "user", "content": "Pick a number from 1 to 9."},
                                   {"role": "assistant", "content": first[col.ANSWER]}]
    # the chat template renders the whole conversation, the model's own first answer in it
    assert second[col.PROMPT] == ("<user>Pick a number from 1 to 9.</user><assistant>answer 1 (sample 0)</assistant>"
                                  "<user>Repeat the number you said.</user><assistant>")
    assert first[col.PROMPT] == "<user>Pick a number from 1 to 9.</user><assistant>"  # as a one-turn row's
    assert (stats.rows, stats.generated, stats.resumed) == (6, 6, 0)


def test_each_sample_of_a_second_turn_follows_the_same_samples_first_answer(tmp_path):
    generations, _ = _answer(_Engine(), _split(tmp_path, TWO_TURNS[:1]), n=2)
    rows = generations.to_list()
    assert [(r[col.ID], r[col.SAMPLE]) for r in rows] == [("81/turn-1", 0), ("81/turn-1", 1), ("81/turn-2", 0),
                                                           ("81/turn-2", 1)]
    for first, second in zip(rows[:2], rows[2:]):
        assert second[col.HISTORY][1]["content"] == first[col.ANSWER]


def test_the_alpaca_template_renders_a_conversation_turn_by_turn():
    text = alpaca_conversation([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi."},
                                {"role": "assistant", "content": "Hello."}], "Again?")
    assert text == alpaca_prompt("Hi.") + "Hello.\n\n### Instruction:\nAgain?\n\n### Response:\n"
    assert alpaca_conversation([], "Hi.") == alpaca_prompt("Hi.")


def test_a_kill_during_turn_2_resumes_both_turns_saved_and_generates_only_the_rest(tmp_path):
    split = _split(tmp_path)
    checkpoint = AnswerCheckpoint(tmp_path / "ck", "org/model", "org/model", sampling=SamplingConfig(),
                                  engine=EngineConfig())
    killed = _Engine(stop_after=4)  # the three first turns, then one second turn
    with pytest.raises(KeyboardInterrupt):
        _answer(killed, split, checkpoint=checkpoint)
    assert len(checkpoint.load()) == 4
    second_turns = list(killed.calls[1].values())

    rerun = _Engine()
    generations, stats = _answer(rerun, split, checkpoint=checkpoint)
    assert (stats.resumed, stats.generated) == (4, 2)  # 3 first turns and 1 second turn resumed, 2 second turns new
    # one engine call, for the second turns not saved: the resumed first answers give the same second prompts
    assert [list(call.values()) for call in rerun.calls] == [second_turns[1:]]
    assert not set(killed.done) & set(rerun.done)  # nothing generated twice
    assert len(checkpoint.load()) == 6 and len(set(generations[col.ID])) == 6


def test_a_run_resumed_during_the_first_turns_asks_the_missing_ones_and_the_resumed_ones_second_turns_at_once(tmp_path):
    """One engine call for both (with Ray: one set of replicas, not one per turn)."""
    split = _split(tmp_path, [TWO_TURNS[0], {"id": "a", "instruction": "Say hi."}, {"id": "b", "instruction": "Go."}])
    checkpoint = AnswerCheckpoint(tmp_path / "ck", "org/model", "org/model", sampling=SamplingConfig(),
                                  engine=EngineConfig())
    with pytest.raises(KeyboardInterrupt):
        _answer(_Engine(stop_after=1), split, checkpoint=checkpoint)  # killed once the conversation's first is saved
    (saved,) = checkpoint.load().values()

    rerun = _Engine()
    generations, stats = _answer(rerun, split, checkpoint=checkpoint)
    assert (stats.resumed, stats.generated) == (1, 3)
    (call,) = rerun.calls
    assert sorted(call.values()) == sorted([
        "<user>Say hi.</user><assistant>", "<user>Go.</user><assistant>",
        f"<user>Pick a number from 1 to 9.</user><assistant>{saved.answer}</assistant>"
        "<user>Repeat the number you said.</user><assistant>"])
    assert generations[col.ID] == ["81/turn-1", "81/turn-2", "a", "b"]


def test_the_judge_sees_the_conversation_so_far_and_scores_the_last_answer():
    rubric = load_rubric("task-accuracy")
    history = [{"role": "user", "content": "Pick a number."}, {"role": "assistant", "content": "7"}]
    prompt = judge_messages(rubric, "Repeat it.", "7", None, history)[1]["content"]
    assert CONVERSATION_INTRO in prompt
    assert "### User:\nPick a number.\n\n### Assistant:\n7\n\n### User:\nRepeat it." in prompt
    # a one-turn row (or a first turn) is asked exactly as before
    assert judge_messages(rubric, "Pick a number.", "7", "3", []) == judge_messages(rubric, "Pick a number.", "7", "3")


def test_a_pair_of_second_turns_shows_each_answer_after_its_own_models_first():
    history_a = [{"role": "user", "content": "Pick a number."}, {"role": "assistant", "content": "7"}]
    history_b = [{"role": "user", "content": "Pick a number."}, {"role": "assistant", "content": "4"}]
    instruction, a, b = turn_pair("Repeat it.", "7", "5", history_a, history_b)
    assert "### User, turn 1:\nPick a number." in instruction and instruction.endswith("### User, turn 2:\nRepeat it.")
    assert a == "### Assistant, turn 1:\n7\n\n### Assistant, turn 2 (the answer compared):\n7"
    assert b.startswith("### Assistant, turn 1:\n4")
    assert turn_pair("Hi.", "x", "y", [], []) == ("Hi.", "x", "y")


def test_the_summary_has_each_turns_means_beside_the_overall_ones():
    rows = [{col.ID: f"{c}/turn-{t}", col.TURN: t, col.MODEL_ID: "m", col.JUDGE_ERROR: None, col.ANSWER: "x",
             col.score("accuracy"): score, col.score("style"): 2}
            for c, scores in (("a", (3, 1)), ("b", (3, 2)), ("c", (2, 1))) for t, score in zip((1, 2), scores)]
    scores = model_scores(Dataset.from_list(rows), rubric=load_rubric("task-accuracy"))
    assert scores.criterion("accuracy").mean == 2.0
    assert [(t.turn, t.rows, t.scored) for t in scores.turns] == [(1, 3, 3), (2, 3, 3)]
    first, second = (t.criteria[0] for t in scores.turns)
    assert (round(first.mean, 4), round(second.mean, 4)) == (2.6667, 1.3333) and first.ci is not None


def test_one_turn_rows_have_no_turn_figures():
    rows = [{col.ID: str(i), col.MODEL_ID: "m", col.JUDGE_ERROR: None, col.ANSWER: "x", col.score("accuracy"): 2,
             col.score("style"): 2} for i in range(3)]
    assert model_scores(Dataset.from_list(rows), rubric=load_rubric("task-accuracy")).turns == []


def test_turn_rows_of_a_summary_read_per_model_and_turn():
    from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary

    rows = [{col.ID: f"a/turn-{t}", col.TURN: t, col.MODEL_ID: "m", col.JUDGE_ERROR: None, col.ANSWER: "x",
             col.INSTRUCTION: "q", col.REFERENCE: None, col.JUDGE_MODEL: "stub", col.score("accuracy"): t,
             col.score("style"): 2, col.HISTORY: [] if t == 1 else [{"role": "user", "content": "q"},
                                                                  {"role": "assistant", "content": "x"}]}
            for t in (1, 2)]
    summary = build_summary(SummaryInputs([Dataset.from_list(rows)], rubric=load_rubric("task-accuracy")))
    assert [r[:3] for r in turn_rows(summary)] == [["m", "1", "1/1"], ["m", "2", "1/1"]]
    second = next(item for item in summary.items if item.id == "a/turn-2")
    assert second.turn == 2 and second.answers[0].history[1] == {"role": "assistant", "content": "x"}
    page = render_html(summary)
    assert "Per turn of the conversations" in page and "conversation so far" in page and "<em>turn 2:</em>" in page


def test_pairwise_win_rates_per_turn():
    from llm_engineering.evaluation.judging.pairwise import tally
    from llm_engineering.evaluation.stored.pairwise import PairwiseRow
    from llm_engineering.evaluation.stored.summary import EvaluationSummary

    rows = [PairwiseRow(id=f"{c}/turn-{t}", turn=t, points=points, in_order="A", swapped="B")
            for c in "abc" for t, points in ((1, 1.0), (2, 0.0 if c != "c" else 0.5))]
    summary = EvaluationSummary(judge_model="stub", models=[], ranking=[], created_at="now",
                                pairwise=[tally("m1", "m2", "stub", rows)])
    assert pairwise_turn_rows(summary) == [["m1 vs m2", "1", "100% [100%, 100%]", "3"], ["m1 vs m2", "2", "17% [0%, 50%]", "3"]]


def test_the_embedded_conversations_are_two_turn_rows_with_a_reference_per_turn():
    split = read_test_split(DatasetConfig(source="embedded-conversations"))
    assert len(split) == 10 and split[col.TURN] == [1, 2] * 5
    assert all(split[col.REFERENCE]) and split[1][col.ID] == "c001/turn-2"


def test_the_judge_check_reads_first_turns_with_a_reference_and_similarity_skips_turns_without_one(tmp_path):
    import numpy as np

    from llm_engineering.evaluation.trust.similarity import add_reference_similarity
    from llm_engineering.evaluation.turns import first_turns, with_references

    split = _split(tmp_path)
    assert with_references(first_turns(split))[col.ID] == ["81/turn-1", "83/turn-1"]
    one_turn = _split(tmp_path, [{"instruction": "Explain LoRA.", "output": "Low-rank adapters."}])
    assert with_references(first_turns(one_turn)) is one_turn

    class Embedder:
        def encode(self, texts):
            return np.ones((len(texts), 2)) / np.sqrt(2)

    answered = split.add_column(col.ANSWER, ["an answer"] * len(split))
    similarity = add_reference_similarity(answered, Embedder())[col.REFERENCE_SIMILARITY]
    assert [value is None for value in similarity] == [False, True, True, True, False, False]
