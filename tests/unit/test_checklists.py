"""Checklist verdicts: items read as probabilities, a missed item lowering the score, a user's `checklist` column used
as given, the reference's sentences as items, every item of one answer sharing its prompt's prefix, the report card
grading the reference itself on its items."""

import json
import math
import re

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeCheckConfig
from llm_engineering.evaluation.generation.dataset import validate_split
from llm_engineering.evaluation.judging.checklist import (
    GRADER_SYSTEM,
    ItemReading,
    checklist_score,
    clean_items,
    yes_probability,
)
from llm_engineering.evaluation.judging.checklist_writing import with_checklists, write_checklists
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.reference_points import reference_points
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.judging.scoring import score_answers
from llm_engineering.evaluation.judging.transport import JudgeReply
from llm_engineering.evaluation.trust.card import run_judge_check

RUBRIC = load_rubric("reference-checklist")


def _yes_no(p_yes: float) -> JudgeReply:
    """A one-token reply with its candidates: Yes at p_yes, No at the rest (and a stray token beside them)."""
    candidates = [("Yes", math.log(p_yes)), ("No", math.log(1 - p_yes)), ("The", math.log(1e-4))]
    return JudgeReply(text="Yes" if p_yes >= 0.5 else "No", logprobs=[("Yes" if p_yes >= 0.5 else "No", candidates)],
                      prompt_tokens=20, completion_tokens=1)


def test_an_items_probability_is_yes_over_yes_and_no_at_the_first_token_whatever_else_is_there():
    assert yes_probability(_yes_no(0.8)).yes == pytest.approx(0.8, abs=1e-6)
    # Under a grammar vLLM offers the word's first piece (`Y`, `N`): read as Yes and No.
    split = JudgeReply(text="Y", logprobs=[("Y", [("Y", math.log(0.3)), ("N", math.log(0.6)), (" No", math.log(0.1))])])
    assert yes_probability(split).yes == pytest.approx(0.3)
    maybe = yes_probability(JudgeReply(text="Maybe", logprobs=[("Maybe", [("Maybe", 0.0)])]))
    assert maybe.yes is None and maybe.mass == 0 and "unread" in maybe.problem
    assert yes_probability(JudgeReply(text="Yes", logprobs_problem="refused")).problem == "refused"


def _read(*probabilities):
    return [ItemReading(p, 1.0) if p is not None else ItemReading(None, None, "no reply") for p in probabilities]


def test_the_score_follows_the_items_probabilities_and_a_missed_item_lowers_it():
    items = ["vLLM pages the KV cache", "blocks hold 16 tokens", "it serves many requests at once"]
    held = checklist_score(items, _read(0.98, 0.97, 0.99), [1, 2, 3])
    missed = checklist_score(items, _read(0.98, 0.08, 0.99), [1, 2, 3])  # one point not stated
    assert held.expected > missed.expected and held.level == 3 and missed.level == 2
    assert held.expected == pytest.approx(1 + 2 * (0.98 + 0.97 + 0.99) / 3)
    assert missed.analysis().startswith("2 of 3 checklist items stated. not stated: blocks hold 16 tokens (0.08)")
    unread = checklist_score(items, _read(0.9, None, None), [1, 2, 3])
    assert unread.level is None and "2 of 3 checklist items unread" in unread.problem
    assert "('blocks hold 16 tokens': no reply)" in unread.problem


def test_items_that_are_empty_repeated_a_copy_of_the_reference_or_past_the_limit_are_dropped_with_the_reason():
    reference = " ".join(f"word{k}" for k in range(30)) + "."
    kept, dropped = clean_items(["A point.", " ", "a point.", reference, "B.", "C."], reference, 2)
    assert kept == ["A point.", "B."]
    assert [d.split(":")[0] for d in dropped] == ["an empty item", "a repeat", "a copy of the whole reference",
                                                  "past the 2-item limit"]
    assert reference_points("vLLM is fast. It pages the cache. Blocks hold tokens.", 3) == [
        "vLLM is fast.", "It pages the cache.", "Blocks hold tokens."]


class Grader:
    """Answers each checklist item Yes where the answer holds the item's last word (a one-token reply with its
    candidates), and any other question (the scores of the other criteria) with a style verdict at 2."""

    judge_id = "grader"

    def __init__(self):
        self.asked = []

    def cache_namespace(self, reply_schema):
        return {"judge": "grader"}

    def complete(self, conversations, on_reply, reply_schema):
        for index, messages in enumerate(conversations):
            self.asked.append(messages)
            prompt = messages[1]["content"]
            if reply_schema is not None and reply_schema.choices:
                answer = prompt.split("\n\nAnswer: ")[1].split("\n\nDoes the answer")[0]
                word = re.findall(r"\w+", prompt.split("Point: ")[1])[-1]
                on_reply(index, _yes_no(0.95 if word in answer else 0.1))
            else:
                head, tail = '{"style": {"score": ', "}}"
                on_reply(index, JudgeReply(text=f"{head}2{tail}", logprobs=[
                    (head, None), ("2", [("2", math.log(0.7)), ("3", math.log(0.3))]), (tail, None)]))


def test_each_answer_is_graded_on_its_rows_items_every_prompt_of_an_answer_sharing_its_opening():
    rows = Dataset.from_dict({col.ID: ["a", "b"], col.INSTRUCTION: ["What is vLLM?", "What is LoRA?"],
                              col.ANSWER: ["vLLM pages the cache in blocks", "LoRA trains adapters"],
                              col.MODEL_ID: ["m", "m"], col.CHECKLIST: [["It pages the cache", "in blocks"],
                                                                          ["It trains adapters", "at rank 8"]]})
    grader = Grader()
    scored = score_answers(rows, Judge((grader,), RUBRIC)).to_list()
    assert [r[col.JUDGE_ERROR] for r in scored] == [None, None]
    # Row a holds both its points, row b misses "at rank 8": its score is lower, its analysis names the point.
    assert [r[col.score("accuracy")] for r in scored] == [3, 2]
    assert scored[0][col.expected("accuracy")] == pytest.approx(1 + 2 * 0.95)
    assert scored[1][col.expected("accuracy")] == pytest.approx(1 + 2 * (0.95 + 0.1) / 2)
    assert "not stated: at rank 8 (0.10)" in scored[1][col.analysis("accuracy")]
    assert [i["item"] for i in scored[1][col.checklist_items("accuracy")]] == ["It trains adapters", "at rank 8"]
    assert [(r[col.score("style")], r[col.JUDGE_CALLS]) for r in scored] == [(2, 3), (2, 3)]  # 2 items and the style
    for answer in ("vLLM pages the cache in blocks", "LoRA trains adapters"):  # one opening per answer, the point after
        asked = [m for m in grader.asked if f"Answer: {answer}\n\n" in m[1]["content"]]
        items = [m for m in asked if m[0]["content"] == GRADER_SYSTEM]
        assert len(asked) == 3 and len(items) == 2
        opening = items[0][1]["content"].split("\n\nDoes the answer")[0]
        assert all(m[1]["content"].startswith(opening) for m in items)
        # The style is asked with the rubric's own prompt, as the default rubric asks its scores.
        (style,) = [m for m in asked if m not in items]
        assert style[0]["content"] == RUBRIC.system_prompt and "Style scale:" in style[1]["content"]


class Writer:
    """Writes two items per row it is asked about; counts the rows."""

    judge_id = "writer"

    def __init__(self):
        self.asked = []

    def cache_namespace(self, reply_schema):
        return {"judge": "writer"}

    def complete(self, conversations, on_reply, reply_schema):
        for index, messages in enumerate(conversations):
            self.asked.append(messages[1]["content"])
            on_reply(index, JudgeReply(text=json.dumps({"items": ["names two uses", "explains one"]})))


def test_a_users_checklist_column_is_used_as_given_and_the_others_come_from_the_reference_or_the_writer():
    source = Dataset.from_list([
        {"id": "given", "instruction": "Name two uses.", "answer": "Search. Recommendations.",
         "checklist": ["mentions search", "mentions recommendations"]},
        {"id": "ref", "instruction": "What is RAG?", "answer": "RAG retrieves documents. It then generates.",
         "checklist": None},
        {"id": "bare", "instruction": "Explain LoRA.", "answer": None, "checklist": None},
    ])
    split = validate_split(source)
    assert split[col.CHECKLIST] == [["mentions search", "mentions recommendations"], None, None]
    writer = Writer()
    checklists = write_checklists(Judge((writer,), RUBRIC), split, max_items=6)
    by_id = {row[col.ID]: row for row in checklists}
    assert by_id["given"][col.CHECKLIST] == ["mentions search", "mentions recommendations"]
    assert by_id["given"]["source"] == "dataset"
    assert by_id["ref"][col.CHECKLIST] == ["RAG retrieves documents.", "It then generates."]
    assert by_id["bare"][col.CHECKLIST] == ["names two uses", "explains one"]
    assert (by_id["bare"]["source"], by_id["bare"]["writer"]) == ("written from the instruction", "writer")
    assert by_id["ref"]["writer"] is None
    assert len(writer.asked) == 1 and "Explain LoRA." in writer.asked[0]  # only the row with neither was written
    joined = with_checklists(split.add_column(col.ANSWER, ["x", "y", "z"]), checklists)
    assert joined[col.CHECKLIST][0] == ["mentions search", "mentions recommendations"]


class RewordingGrader(Grader):
    """The grader, which also rewords a text when asked (its words kept, "the" made "a")."""

    def complete(self, conversations, on_reply, reply_schema):
        if reply_schema is not None and reply_schema.name == "rewording":
            for index, messages in enumerate(conversations):
                self.asked.append(messages)
                text = messages[1]["content"].split("Text: ")[1].split("\n\nGive the rewritten")[0]
                on_reply(index, JudgeReply(text=json.dumps({"answer": "Indeed, " + text.replace(" the ", " a ")})))
            return
        super().complete(conversations, on_reply, reply_schema)


def test_a_checklist_judges_report_card_grades_a_rewording_on_the_items_the_rules_read():
    """A checklist made of the reference's sentences graded on the reference itself proves nothing (every item is a
    sentence of it, word for word): the right answer is a faithful rewording, and the rules read the items."""
    references = ["vLLM pages the KV cache in blocks.", "LoRA trains the small adapters.", "RAG retrieves the documents.",
                  "DPO learns from the preferences."]
    rows = Dataset.from_dict({col.ID: [f"q{k}" for k in range(4)], col.INSTRUCTION: [f"Question {k}?" for k in range(4)],
                              col.REFERENCE: references,
                              col.CHECKLIST: [reference_points(r, 6) for r in references]})
    grader = RewordingGrader()
    check = run_judge_check(rows, Judge((grader,), RUBRIC), JudgeCheckConfig(rows=4, tiers=["truncated"]))
    assert check.right_answers == "reworded" and check.right_copies == 0
    assert [p.right_answer for p in check.details] == [f"Indeed, {r.replace(' the ', ' a ')}" for r in references]
    assert check.decided_by == "expected" and check.reference_higher_by_expected.count == 4
    assert sum(m[1]["content"].startswith("Rewrite") for m in grader.asked) == 4
    assert set(check.baselines) >= {"reference_overlap", "reference_facts"}  # it reads the items, the reference's points
