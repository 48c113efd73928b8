"""The judge report card: tiers of worse answers built from the split, and the check over them."""

import json

import numpy as np
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.trust.tiers import corrupted, facts, nearest_other, truncated
from llm_engineering.evaluation.trust.judge_check import run_judge_check
from llm_engineering.evaluation.judging.transport import JudgeReply
from llm_engineering.evaluation.report.text import judge_check_rows
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.report.summary import build_summary
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.config import JudgeCheckConfig

HANDBOOK = load_rubric("handbook")


def test_truncation_keeps_the_first_third_of_the_words():
    assert truncated("one two three four five six seven") == "one two"
    assert truncated("single") == "single"


def test_facts_are_numbers_and_name_like_tokens():
    assert facts("LoRA trains 0.1% of the weights of Llama2 7B on one H100, unlike full SFT.") == [
        "LoRA", "0.1%", "Llama2", "7B", "H100", "SFT"]


def test_corruption_swaps_numbers_for_numbers_and_names_for_names_from_other_rows():
    text = "QLoRA loads the model in 4 bits."
    worse = corrupted(text, ["DPO needs 2 models.", "vLLM serves 8 GPUs."], seed=0)
    assert worse != text and "QLoRA" not in worse and " 4 " not in worse
    swapped = facts(worse)
    assert swapped[0] in {"DPO", "vLLM", "GPUs"} and swapped[1] in {"2", "8"}
    assert corrupted("plain words only", ["DPO needs 2 models."], seed=0) is None
    assert corrupted("Uses 4 bits.", ["no facts here"], seed=0) is None


def test_the_nearest_other_row_is_found_by_cosine_and_never_the_row_itself():
    embeddings = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    assert nearest_other(embeddings, [0, 2, 3]) == [1, 3, 2]


class KeywordEmbedder:
    """Embeds a text by which topic word it holds: rows about one topic are each other's nearest."""

    def encode(self, texts):
        return np.array([[float("cats" in t.lower()), float("ships" in t.lower()), 0.01] for t in texts])


def split():
    references = ["Cats sleep 16 hours a day, says the ASPCA.", "Cats purr at 25 Hz when content, per NASA.",
                  "Ships float by displacing 1000 tons of water, as Archimedes found.",
                  "Ships use GPS and 3 radars to navigate, says IMO."]
    return Dataset.from_dict({col.ID: [f"q{i}" for i in range(4)],
                              col.INSTRUCTION: [f"Question {i}." for i in range(4)], col.REFERENCE: references})


class ExactJudge:
    """Scores 3 for the row's own reference word for word, 1 for anything else."""

    judge_id = "exact"

    def __init__(self):
        self.asked = 0

    def cache_namespace(self, reply_schema):
        return {"judge": "exact"}

    def complete(self, conversations, on_reply, reply_schema):
        references = split()[col.REFERENCE]
        for index, messages in enumerate(conversations):
            self.asked += 1
            prompt = messages[1]["content"]
            score = 3 if any(f"Answer: {r}\n" in prompt and f"Question {i}." in prompt for i, r in enumerate(references)) else 1
            on_reply(index, JudgeReply(text=json.dumps({"accuracy": {"analysis": "", "score": score},
                                                        "style": {"analysis": "", "score": 2}}), prompt_tokens=7))


def test_every_tier_is_scored_and_reported_with_its_own_verdict():
    judge = ExactJudge()
    check = run_judge_check(split(), Judge((judge,), HANDBOOK),
                            JudgeCheckConfig(rows=4, threshold=0.7, tiers=["same_topic", "truncated", "corrupted"]),
                            embedder=KeywordEmbedder())
    assert check.tier == "mismatch" and [t.tier for t in check.tiers] == ["same_topic", "truncated", "corrupted"]
    assert all(t.pairs == 4 and t.reference_higher.count == 4 for t in [check, *check.tiers])
    same_topic = check.tiers[0]
    assert sorted((p.id, p.mismatched_id) for p in same_topic.details) == [
        ("q0", "q1"), ("q1", "q0"), ("q2", "q3"), ("q3", "q2")]
    assert check.judge_calls == judge.asked == 4 + 4 * 4 and check.judge_tokens == 7 * 20  # references + 4 tiers
    assert check.judge_seconds_per_verdict > 0 and check.metadata()["judge_seconds_per_verdict"] > 0
    assert "truncated: the reference scored above the reference cut to its first third in 4 of 4" in check.tiers[1].verdict
    rows = judge_check_rows(_summary_with(check))
    assert [r[1] for r in rows] == ["mismatch", "same_topic", "truncated", "corrupted"]


def test_without_an_embedder_the_same_topic_tier_is_left_out():
    check = run_judge_check(split(), Judge((ExactJudge(),), HANDBOOK),
                            JudgeCheckConfig(rows=4, threshold=0.7, tiers=["same_topic", "truncated"]))
    assert [t.tier for t in check.tiers] == ["truncated"]


def _summary_with(check):
    from llm_engineering.evaluation.trust.judge_check import TrustChecks

    answers = split().add_column(col.MODEL_ID, ["m"] * 4).add_column(col.ANSWER, ["a"] * 4)
    return build_summary([answers.add_column(col.JUDGE_MODEL, ["j"] * 4).add_column(col.JUDGE_ERROR, [None] * 4)
                          .add_column(col.score("accuracy"), [1] * 4).add_column(col.score("style"), [1] * 4)],
                         checks=TrustChecks(judge=check))
