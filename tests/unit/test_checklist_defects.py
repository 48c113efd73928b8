"""The checklist verdict's defects (issue 70), each shown on the path a run takes: an item the judge does not answer
Yes or No is unread, not a silent 1.0; Yes and No are whole words; a list reference gives one item per entry; the
level has a probability, so escalation sends on only the rows the judge is unsure of; a failed style reading keeps
the checklist's verdict; each row says where its items came from; the style level is the score the judge wrote."""

import math
import re

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.checklist import YES_NO, checklist_score, level_probabilities, yes_probability
from llm_engineering.evaluation.judging.checklist_writing import with_checklists, write_checklists
from llm_engineering.evaluation.judging.escalation import escalate
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.reference_points import reference_points
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.judging.scoring import score_answers
from llm_engineering.evaluation.judging.transport import JudgeReply, choice_of, choice_token_ids
from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary
from llm_engineering.evaluation.report.text import trust_lines

RUBRIC = load_rubric("reference-checklist")
STYLE_HEAD, STYLE_TAIL = '{"style":{"score":', "}}"


def _first_token(candidates):
    """A one-token reply: its text the likeliest candidate, with the candidates (text, probability)."""
    text = max(candidates, key=lambda c: c[1])[0]
    return JudgeReply(text=text, logprobs=[(text, [(t, math.log(p)) for t, p in candidates])], prompt_tokens=20,
                      completion_tokens=1)


def _style(score, candidates):
    """A style reply that writes `score`, with the candidates at the score token (value, probability)."""
    return JudgeReply(text=f"{STYLE_HEAD}{score}{STYLE_TAIL}", logprobs=[
        (STYLE_HEAD, None), (str(score), [(str(v), math.log(p)) for v, p in candidates]), (STYLE_TAIL, None)])


CONFIDENT_STYLE = _style(2, [(2, 0.98), (1, 0.01), (3, 0.01)])


class Recorded:
    """Replies each checklist item with the first-token candidates its point names (`point -> candidates`), and each
    question for the style with `style`."""

    judge_id = "recorded"

    def __init__(self, items, style=CONFIDENT_STYLE):
        self.items, self.style, self.asked = items, style, []

    def cache_namespace(self, reply_schema):
        return {"judge": self.judge_id}

    def complete(self, conversations, on_reply, reply_schema):
        for index, messages in enumerate(conversations):
            self.asked.append(messages)
            if reply_schema is not None and reply_schema.choices:
                on_reply(index, _first_token(self.items[messages[1]["content"].split("Point: ")[1]]))
            else:
                on_reply(index, self.style(messages) if callable(self.style) else self.style)


YES, NO = [("Yes", 0.97), ("No", 0.03)], [("Yes", 0.04), ("No", 0.96)]


def _rows(checklists, sources=None):
    n = len(checklists)
    rows = Dataset.from_dict({col.ID: [f"r{k}" for k in range(n)], col.INSTRUCTION: [f"Question {k}?" for k in range(n)],
                              col.ANSWER: [f"answer {k}" for k in range(n)], col.MODEL_ID: ["m"] * n,
                              col.CHECKLIST: checklists})
    return rows.add_column(col.CHECKLIST_SOURCE, sources) if sources else rows


def test_an_item_the_judge_would_begin_with_another_word_is_unread_not_a_silent_yes():
    # "The" at 0.9, "Yes" at 0.001, no "No": Yes over Yes and No alone reads 1.0; the mass says the judge did not answer.
    judge = Recorded({"A": YES, "B": [("The", 0.9), ("Yes", 0.001)], "C": YES, "D": [("An", 0.8), ("No", 0.05)]})
    rows = score_answers(_rows([["A", "B", "C"], ["A", "B", "D"]]), Judge((judge,), RUBRIC)).to_list()
    items = rows[0][col.checklist_items("accuracy")]
    assert [i["yes"] for i in items] == [pytest.approx(0.97), None, pytest.approx(0.97)]
    assert items[1]["mass"] == pytest.approx(0.001) and "under the floor 0.5" in items[1]["problem"]
    # Held to Yes or No, the judge replied "Yes": the reason names the word it would have begun with.
    held = yes_probability(JudgeReply(text="Yes", logprobs=[("Yes", [("The", math.log(0.9)), ("Yes", math.log(0.001))])]))
    assert held.yes is None and "its likeliest first token: 'The' at 0.90" in held.problem
    # Left out of the mean (1 + 2 x 0.97, not 1 + 2 x (0.97 + 1 + 0.97) / 3), and said so.
    assert rows[0][col.expected("accuracy")] == pytest.approx(1 + 2 * 0.97)
    assert "2 of 2 checklist items stated (1 unread)" in rows[0][col.analysis("accuracy")]
    # Two of three unread: more than half, so the row has no score, and says why.
    assert rows[1][col.score("accuracy")] is None and "2 of 3 checklist items unread" in rows[1][col.JUDGE_ERROR]
    summary = build_summary(SummaryInputs([score_answers(_rows([["A", "B", "C"], ["A", "B", "D"]]), Judge((judge,),
                                                                                                            RUBRIC))],
                                          rubric=RUBRIC))
    figures = summary.models[0].checklist
    assert (figures.items, figures.unread, figures.unread_rows) == (6, 3, 1)
    assert any("3 of 6 items unread" in line for line in trust_lines(summary))


def test_yes_and_no_are_whole_words_with_trailing_punctuation_or_a_tokenizers_first_letter():
    for word in ("Yes", "Yes,", "Yes.", " yes", "YES!", "Y"):
        assert choice_of(word, YES_NO) == "Yes", word
    for word in ("No", "no.", " NO", "N"):
        assert choice_of(word, YES_NO) == "No", word
    for word in ("Not", "None", "Nope", "Yesterday", "Ye", "The", ""):
        assert choice_of(word, YES_NO) is None, word
    reply = _first_token([("Yes,", 0.5), ("Yes.", 0.2), (" yes", 0.1), ("No", 0.1), ("Not", 0.05), ("Yesterday", 0.05)])
    reading = yes_probability(reply)
    assert reading.yes == pytest.approx(0.8 / 0.9) and reading.mass == pytest.approx(0.9)


def test_the_in_process_judge_holds_the_first_token_to_the_tokens_that_spell_yes_or_no():
    # A tokenizer that spells " no" as a lone space and "no", and "YES" as "Y" and "ES": the space is not allowed.
    vocabulary = {"Yes": [1], "yes": [2], " Yes": [3], " yes": [4], "YES": [5, 6], " YES": [7], "No": [8], "no": [9],
                  " No": [10], " no": [11, 9], "NO": [12], " NO": [13]}
    texts = {1: "Yes", 2: "yes", 3: " Yes", 4: " yes", 5: "Y", 6: "ES", 7: " YES", 8: "No", 9: "no", 10: " No",
             11: " ", 12: "NO", 13: " NO"}
    ids = choice_token_ids(vocabulary.__getitem__, lambda tokens: "".join(texts[t] for t in tokens), YES_NO)
    assert ids == [1, 2, 3, 4, 5, 7, 8, 9, 10, 12, 13]


def test_a_list_reference_gives_one_item_per_entry_without_fragments_and_a_long_one_is_spread_evenly():
    numbered = "The steps are:\n1. Collect the person's posts.\n2. Fine-tune a model\n   on them with LoRA.\n3) Serve it."
    assert reference_points(numbered, 6) == ["Collect the person's posts.", "Fine-tune a model on them with LoRA.",
                                             "Serve it."]
    bullets = "- LoRA trains adapters.\n* QLoRA quantises the base.\n• DPO learns from preferences."
    assert reference_points(bullets, 6) == ["LoRA trains adapters.", "QLoRA quantises the base.",
                                            "DPO learns from preferences."]
    inline = "Twin building. 1. Crawl the data. 2. Clean it well. 3. Train the twin."  # a fragment that opens it: dropped
    assert reference_points(inline, 6) == ["Crawl the data.", "Clean it well.", "Train the twin."]
    # A sentence of one or two words is no point: joined to the next one (the last one: to the one before).
    assert reference_points("In short: vLLM pages the cache. It batches requests. Fast.", 6) == [
        "In short: vLLM pages the cache.", "It batches requests. Fast."]
    sentences = [f"Point {k} holds a fact." for k in range(8)]
    spread = reference_points(" ".join(sentences), 6)
    assert len(spread) == 6 and " ".join(spread) == " ".join(sentences)
    assert sorted(item.count("holds a fact") for item in spread) == [1, 1, 1, 1, 2, 2]
    # The rows' checklists, written from such references, hold the entries.
    rows = Dataset.from_dict({col.ID: ["a"], col.INSTRUCTION: ["How?"], col.REFERENCE: [numbered]})
    assert write_checklists(Judge((Recorded({}),), RUBRIC), rows, 6)[col.CHECKLIST] == [reference_points(numbered, 6)]


def test_the_levels_probability_comes_from_the_items_so_escalation_sends_on_only_the_unsure_rows():
    # Three items, each sure: the level is 3 unless one of them is a No (then 2). One item at 0.5: the level hangs on it.
    assert level_probabilities([0.99, 0.99, 0.99], [1, 2, 3]) == pytest.approx([0, 1 - 0.99 ** 3, 0.99 ** 3], abs=1e-6)
    split = level_probabilities([0.99, 0.99, 0.5], [1, 2, 3])
    assert split[1] == pytest.approx(0.5, abs=0.02) and split[2] == pytest.approx(0.5, abs=0.02)
    first = Recorded({"A": YES, "B": YES, "C": YES, "D": [("Yes", 0.5), ("No", 0.5)]})
    scored = score_answers(_rows([["A", "B", "C"], ["A", "B", "D"]]), Judge((first,), RUBRIC))
    assert scored[0][col.probabilities("accuracy")] is not None
    second = Recorded({"A": NO, "B": NO, "C": NO, "D": NO})
    rows = escalate(scored, Judge((second,), RUBRIC), threshold=0.9).to_list()
    assert [r[col.ESCALATED] for r in rows] == [False, True]  # before: no confidence, so every row went on
    assert rows[0][col.CONFIDENCE] > 0.9 > rows[1][col.CONFIDENCE]


def test_a_failed_style_reading_keeps_the_rows_checklist_verdict_and_the_summary_counts_it():
    def style(messages):
        return JudgeReply(None, "HTTP 500: down") if "answer 1" in messages[1]["content"] else CONFIDENT_STYLE

    judge = Recorded({"A": YES, "B": NO}, style=style)
    evaluations = score_answers(_rows([["A", "B"], ["A", "B"]]), Judge((judge,), RUBRIC))
    rows = evaluations.to_list()
    assert [r[col.JUDGE_ERROR] for r in rows] == [None, None]
    assert [r[col.score("accuracy")] for r in rows] == [2, 2] and [r[col.score("style")] for r in rows] == [2, None]
    assert "HTTP 500: down" in rows[1][col.score_error("style")] and rows[0][col.score_error("style")] is None
    summary = build_summary(SummaryInputs([evaluations], rubric=RUBRIC))
    accuracy, style_scores = summary.models[0].criteria
    assert sum(accuracy.counts.values()) == 2 and sum(style_scores.counts.values()) == 1
    assert style_scores.unscored == 1 and "HTTP 500: down" in style_scores.unscored_problem
    assert any(line.startswith("Style of m: 1 rows have no score") for line in trust_lines(summary))


def test_each_row_says_where_its_items_came_from_and_the_summary_counts_the_rows_of_each_source():
    split = Dataset.from_dict({col.ID: ["ref", "bare"], col.INSTRUCTION: ["What is RAG?", "Explain LoRA."],
                               col.REFERENCE: ["RAG retrieves documents first. It then generates an answer.", None]})

    class Writer(Recorded):
        def complete(self, conversations, on_reply, reply_schema):
            for index, _ in enumerate(conversations):
                on_reply(index, JudgeReply(text='{"items": ["names adapters", "says low rank"]}'))

    checklists = write_checklists(Judge((Writer({}),), RUBRIC), split, 6)
    assert checklists["source"] == ["reference sentences", "written from the instruction"]
    rows = with_checklists(split.add_column(col.ANSWER, ["RAG retrieves documents", "LoRA adds adapters"])
                           .add_column(col.MODEL_ID, ["m", "m"]), checklists)
    judge = Recorded({"RAG retrieves documents first.": YES, "It then generates an answer.": NO,
                      "names adapters": YES, "says low rank": YES})
    evaluations = score_answers(rows, Judge((judge,), RUBRIC))
    assert evaluations[col.CHECKLIST_SOURCE] == ["reference sentences", "written from the instruction"]
    summary = build_summary(SummaryInputs([evaluations], rubric=RUBRIC))
    sources = {s.source: (s.rows, s.expected_mean) for s in summary.models[0].checklist.sources}
    assert sources == {"reference sentences": (1, pytest.approx(1 + 2 * 0.505, abs=1e-3)),
                       "written from the instruction": (1, pytest.approx(1 + 2 * 0.97, abs=1e-3))}
    (line,) = [line for line in trust_lines(summary) if line.startswith("Checklist items of m")]
    assert "1 on written from the instruction" in line and "not which facts it must state" in line


def test_the_style_level_is_the_score_the_judge_wrote_with_its_expected_score_beside_it():
    # Recorded from Qwen2.5-Coder-1.5B's style scores: 2 at 0.47, 1 at 0.36, 3 at 0.17. A judge that writes 3 there
    # (sampling at a temperature above 0) gets 3, not the most likely value.
    recorded = [(2, math.exp(-0.764)), (1, math.exp(-1.014)), (3, math.exp(-1.764))]
    judge = Recorded({"A": YES}, style=_style(3, recorded))
    row = score_answers(_rows([["A"]]), Judge((judge,), RUBRIC))[0]
    assert row[col.score("style")] == 3
    assert row[col.expected("style")] == pytest.approx(1.8086, abs=1e-3)
    assert row[col.probabilities("style")][1] == max(row[col.probabilities("style")])
    # Asked with the rubric's own prompt: its system prompt and scale, the score first.
    (asked,) = [m for m in judge.asked if m[0]["content"] == RUBRIC.system_prompt]
    assert re.search(r"Style scale:\n1: Poor", asked[1]["content"]) and '{"style": {"score": 1' in asked[1]["content"]


def test_a_checklist_score_without_items_or_with_every_item_unread_has_none():
    assert checklist_score([], [], [1, 2, 3]).problem == "the row has no checklist items"
    unread = yes_probability(_first_token([("The", 0.9), ("No", 0.01)]))
    assert checklist_score(["A"], [unread], [1, 2, 3]).level is None
