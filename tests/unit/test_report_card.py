"""The judge report card: tiers of worse answers built from the split, and the check over them."""

import json

from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeCheckConfig
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.judging.transport import JudgeReply
from llm_engineering.evaluation.report.card_text import judge_check_rows
from llm_engineering.evaluation.report.score_tables import table_rows
from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary
from llm_engineering.evaluation.trust.card import run_judge_check
from llm_engineering.evaluation.trust.rules import RULES, instruction_overlap, longer
from llm_engineering.evaluation.trust.tiers import FILTERED_TIERS, corrupted, facts, same_topic, truncated, unfinished

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
    assert corrupted("vLLM uses 4 bits.", ["DPO needs 2 models on 16 H100 GPUs."], seed=0) in {
        "H100 uses 2 bits.", "GPUs uses 2 bits."}  # of the same length where one is: not 16, not DPO


def split():
    references = ["Cats sleep 16 hours a day, says the ASPCA.", "Cats purr at 25 Hz when content, per NASA.",
                  "Ships float by displacing 1000 tons of water, as HMS Victory shows.",
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
                            JudgeCheckConfig(rows=4, threshold=0.7, tiers=["truncated", "corrupted"]))
    assert check.tier == "mismatch" and [t.tier for t in check.tiers] == ["truncated", "corrupted"]
    assert all(t.pairs == 4 and t.reference_higher.count == 4 for t in [check, *check.tiers])
    assert check.judge_calls == judge.asked == 4 + 3 * 4 and check.judge_tokens == 7 * 16  # references + 3 tiers
    assert check.judge_seconds_per_verdict > 0 and check.metadata()["judge_seconds_per_verdict"] > 0
    assert "the right answer above an answer that loops without making its point in 4/4 (100%" in check.tiers[0].verdict
    rows = judge_check_rows(_summary_with(check))
    assert [r[0] for r in rows] == ["mismatch", "truncated", "corrupted"]


def _summary_with(check):
    from llm_engineering.evaluation.stored.trust import TrustChecks

    answers = split().add_column(col.MODEL_ID, ["m"] * 4).add_column(col.ANSWER, ["a"] * 4)
    return build_summary(SummaryInputs(
        [answers.add_column(col.JUDGE_MODEL, ["j"] * 4).add_column(col.JUDGE_ERROR, [None] * 4)
         .add_column(col.score("accuracy"), [1] * 4).add_column(col.score("style"), [1] * 4)],
        checks=TrustChecks(judge=check)))


def test_an_unfinished_answer_echoes_the_instruction_and_loops_to_the_references_length():
    reference = "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu."
    worse = unfinished("Name the letters.", reference)
    assert worse.startswith("Name the letters. Alpha beta gamma delta Name the letters.")
    assert abs(len(worse) - len(reference)) <= len("letters.") and "mu." not in worse


def test_corruption_leaves_the_names_the_instruction_asks_about():
    worse = corrupted("QLoRA loads LLaMA in 4 bits.", ["DPO needs 2 models on vLLM."], seed=0,
                      instruction="Why does QLoRA save memory?")
    assert worse.startswith("QLoRA loads ") and "LLaMA" not in worse and " 4 " not in worse
    assert corrupted("QLoRA is small.", ["DPO needs vLLM."], seed=0, instruction="What is QLoRA?") is None


def test_the_same_topic_candidates_are_the_other_rows_holding_most_of_the_references_words():
    references = ["Cats purr by vibrating the larynx.", "Dogs bark loudly.", "Purring cats vibrate their larynx muscles.",
                  "Ships float.", "Cats vibrate."]
    # 2 holds cats, larynx (and not "purr": another word form); 4 holds cats; 1 and 3 hold none (the lower row first)
    assert same_topic(references, [0], k=3) == [[2, 4, 1]]
    assert same_topic(references, [0, 3], k=1) == [[2], [0]]  # "ships" is nowhere else: the first other row


def test_judge_free_rules_order_two_answers_by_length_and_by_the_instructions_words():
    assert longer("q", "a longer answer", "short") == 1 and longer("q", "ab", "cd") == 0
    assert instruction_overlap("Why do cats purr?", "Cats purr when calm.", "Dogs bark.") == 1
    assert instruction_overlap("Why do cats purr?", "Dogs bark.", "Cats purr.") == -1
    assert instruction_overlap("Why do cats purr?", "Cats sleep.", "Cats eat.") == 0  # a tie is no pass


def test_every_rule_orders_the_cards_own_pairs_and_a_tier_a_rule_passes_is_marked_so():
    """The card's own pairs (embedded split, default sample) decided without a judge: the harder tiers are built so
    that neither the longer answer nor the instruction's words pass them, but a rule that reads the reference (its
    words, its names and numbers) passes each tier: every tier is marked as one a rule passes, so a judge passes it
    only above that rule. (The echo judge rewords nothing: the right answers are the references, as for a judge
    that does not see them; the rules that read the reference are scored under a rubric that shows it.)"""
    from llm_engineering.evaluation.config import DatasetConfig
    from llm_engineering.evaluation.generation.dataset import read_test_split

    check = run_judge_check(read_test_split(DatasetConfig()), Judge((EchoJudge(),), load_rubric("task-accuracy")),
                            JudgeCheckConfig())
    handbook = run_judge_check(read_test_split(DatasetConfig()), Judge((EchoJudge(),), HANDBOOK),
                               JudgeCheckConfig(rows=4, tiers=[]))
    assert set(handbook.baselines) == {"longer", "instruction_overlap", "distinct_words"}  # it never sees the reference
    assert [t.tier for t in check.tiers] == ["same_topic", "truncated", "corrupted", "relation_swap", "negation"]
    for tier in (t for t in check.tiers if t.pairs):
        assert set(tier.baselines) == set(RULES)
        assert tier.baselines["longer"].rate <= 0.65 and tier.baselines["instruction_overlap"].rate <= 0.65, tier.tier
    assert check.baselines["instruction_overlap"].rate >= 0.8  # another question's answer: even word overlap sees it
    old = [t for t in [check, *check.tiers] if t.tier not in FILTERED_TIERS]
    assert all(t.rule_passes and t.pairs >= 8 for t in old)
    assert check.tiers[2].best_rule == "reference_facts" and check.tiers[2].baselines["reference_facts"].rate == 1.0
    # The tiers no rule may pass: built from the same rows, every rule orders none of their pairs.
    new = {t.tier: t for t in check.tiers if t.tier in FILTERED_TIERS}
    assert all(t.candidates and not t.rule_passes and all(r.count == 0 for r in t.baselines.values())
               for t in new.values())
    # The echo judge's "rewordings" fail, so its right answers are the references themselves: every pair made of the
    # reference is ordered by exact match (the card says so), and no other row's reference holds as many of its words
    for tier in new.values():
        assert tier.pairs == 0 and tier.dropped["reference_overlap" if tier.tier == "same_topic" else "exact_match"] \
            == tier.candidates, tier
    # The echo judge ties every pair: it fails every tier, which the card says tier by tier.
    assert {t.outcome for t in [check, *check.tiers] if t.pairs} == {"fails"} and check.no_signal


class EchoJudge:
    """Scores every answer 2 (the rules are what the test reads)."""

    judge_id = "echo"

    def cache_namespace(self, reply_schema):
        return {"judge": "echo"}

    def complete(self, conversations, on_reply, reply_schema):
        for index, _ in enumerate(conversations):
            on_reply(index, JudgeReply(text=json.dumps({"accuracy": {"analysis": "", "score": 2}})))


class CopyJudge:
    """Reference-guided: scores 3 only for an answer identical to the reference it is shown, 1 for anything else; asked
    to reword, it puts the reference's sentences in reverse order (every fact kept)."""

    judge_id = "copy"

    def cache_namespace(self, reply_schema):
        return {"judge": "copy"}

    def complete(self, conversations, on_reply, reply_schema):
        for index, messages in enumerate(conversations):
            prompt = messages[1]["content"]
            if reply_schema is not None and reply_schema.name == "rewording":
                reference = prompt.split("Text: ")[1].split("\n\nGive the rewritten")[0]
                text = json.dumps({"answer": " ".join(reversed(reference.split(", ")))})
            else:
                reference = prompt.split("Reference answer")[1].split("): ", 1)[1].split("\n\nAnswer: ")[0]
                answer = prompt.split("\n\nAnswer: ")[1].split("\n\nGive your evaluation")[0]
                text = json.dumps({"correctness": {"score": 5 if answer == reference else 1}})
            on_reply(index, JudgeReply(text=text))


def test_a_judge_that_only_recognises_the_reference_word_for_word_fails_a_reference_guided_card():
    """Shown the reference, a judge comparing a text with itself proves nothing: the right answer is the reference
    reworded, so the rule "identical to the reference is right" no longer passes."""
    guided = load_rubric("reference-guided")
    check = run_judge_check(split(), Judge((CopyJudge(),), guided), JudgeCheckConfig(rows=4, tiers=["mismatch"]))
    assert check.right_answers == "reworded" and check.right_copies == 0
    assert check.reference_higher.count == 0 and check.no_signal
    assert check.lowest_level.count == 4 and check.reference_accuracy_mean == 1.0


def test_the_corrupted_answer_is_the_reworded_right_answer_with_its_names_swapped_not_the_reference():
    """Where the judge sees the reference, the right answer is reworded, and the corrupted answer is that same wording
    with its names and numbers swapped: the pair differs in those alone. (Made from the reference, the wrong answer
    would be worded as the text the judge is shown, and the right one would not.)"""
    check = run_judge_check(split(), Judge((CopyJudge(),), load_rubric("reference-guided")),
                            JudgeCheckConfig(rows=4, tiers=["corrupted"]))
    (tier,) = check.tiers
    assert tier.tier == "corrupted" and tier.pairs == 4 and check.right_copies == 0
    for pair in tier.details:
        right, worse = pair.right_answer.split(), pair.worse_answer.split()
        changed = [(a, b) for a, b in zip(right, worse) if a != b]
        assert len(right) == len(worse) and changed, (pair.right_answer, pair.worse_answer)
        assert all(facts(a) and facts(b) for a, b in changed), (pair.right_answer, pair.worse_answer)


def test_the_table_sets_the_right_and_the_wrong_answers_means_under_the_models():
    summary = _summary_with(run_judge_check(split(), Judge((ExactJudge(),), HANDBOOK), JudgeCheckConfig(rows=4,
                                                                                                       tiers=[])))
    *models, right, wrong = table_rows(summary)
    assert [m[0] for m in models] == ["m"] and right[0].startswith("right answers") and wrong[0].startswith("answers to")
    assert right[1].startswith("3.00") and wrong[1].startswith("1.00") and right[2] == wrong[2] == ""


class OwnQuestionJudge:
    """Judges on the instruction alone (the rubric shows no reference where the row has none): 3 for an answer that
    names its own question's number ("Question 2." -> "about 2"), 1 for any other; it fails if shown a reference."""

    judge_id = "own-question"

    def cache_namespace(self, reply_schema):
        return {"judge": "own-question"}

    def complete(self, conversations, on_reply, reply_schema):
        for index, messages in enumerate(conversations):
            prompt = messages[1]["content"]
            assert "Reference answer" not in prompt, prompt
            number = prompt.split("Instruction: Question ")[1].split(".")[0]
            answer = prompt.split("\n\nAnswer: ")[1].split("\n\n")[0]
            score = 3 if answer == f"about {number}" else 1
            on_reply(index, JudgeReply(text=json.dumps({"accuracy": {"analysis": "", "score": score},
                                                        "style": {"analysis": "", "score": 2}})))


def test_without_references_the_card_pairs_each_rows_own_answer_with_another_rows_answer():
    rows = Dataset.from_dict({col.ID: [f"q{i}" for i in range(4)], col.INSTRUCTION: [f"Question {i}." for i in range(4)],
                              col.REFERENCE: [None] * 4, col.ANSWER: [f"about {i}" for i in range(4)]})
    check = run_judge_check(rows, Judge((OwnQuestionJudge(),), load_rubric("task-accuracy")),
                            JudgeCheckConfig(rows=4, tiers=["same_topic", "truncated", "corrupted"]), from_answers=True)
    assert check.right_answers == "answers" and check.tiers == []  # the harder tiers need references
    assert check.reference_higher.count == 4 and not check.no_signal
    assert sorted(p.right_answer for p in check.details) == [f"about {i}" for i in range(4)]
    assert all(p.worse_answer != p.right_answer and p.worse_answer.startswith("about ") for p in check.details)


def test_the_notes_say_how_many_rows_had_a_reference_and_which_checks_could_not_be_made():
    from llm_engineering.evaluation.trust.notes import trust_notes

    assert trust_notes(10, 10, True, True) == []
    (some,) = trust_notes(10, 6, True, True)
    assert some.startswith("6 of 10 rows have a reference answer: the report card and the similarity check use those 6")
    (none,) = trust_notes(10, 0, True, True)
    assert none.startswith("0 of 10 rows have a reference answer: too few") and "mismatch tier alone" in none
    assert "same_topic, truncated, corrupted, relation_swap, negation" in none and "similarity check" in none
    (no_check,) = trust_notes(10, 1, False, False)
    assert "pairs each row's own answer" not in no_check and "similarity" not in no_check


def test_the_summary_counts_the_rows_with_a_reference_and_says_how_the_others_were_judged():
    answers = Dataset.from_dict({col.ID: ["a", "b", "c"], col.INSTRUCTION: ["x", "y", "z"], col.REFERENCE: ["r", None, None],
                                 col.MODEL_ID: ["m"] * 3, col.ANSWER: ["1", "2", "3"], col.JUDGE_MODEL: ["j"] * 3,
                                 col.JUDGE_ERROR: [None] * 3, col.score("accuracy"): [3, 1, 2], col.score("style"): [1] * 3})
    summary = build_summary(SummaryInputs([answers], rubric=load_rubric("task-accuracy")))
    assert summary.models[0].reference_rows == 1
    assert any(n.startswith("References: 1 of 3 answers' rows have a reference answer; the others are judged on the "
                            "instruction and the answer alone") for n in summary.notes), summary.notes
    full = build_summary(SummaryInputs([answers.remove_columns(col.REFERENCE).add_column(col.REFERENCE, ["r"] * 3)],
                                       rubric=load_rubric("task-accuracy")))
    assert not [n for n in full.notes if n.startswith("References")]


def test_a_rewording_is_kept_only_if_it_holds_the_facts_and_most_of_the_words():
    """A right answer on the card is a faithful rewording: a summary that keeps the names (the 0.5B writer's "This text
    discusses ...", scored lower by a judge that reads it) or one that lost a number falls back to the reference."""
    from llm_engineering.evaluation.trust.rewording import keeps_the_facts

    reference = ("MongoDB is simple to run locally with Docker and has managed cloud offerings, so it fits both "
                 "prototyping and production, and it stores 3 kinds of documents without a rigid schema.")
    faithful = ("MongoDB is easy to run locally with Docker and offers managed cloud versions, so it suits both "
                "prototyping and production, and it keeps 3 kinds of documents without forcing a rigid schema.")
    summary = "This text discusses MongoDB, Docker and 3 kinds of documents."
    lost_number = faithful.replace("3 kinds", "several kinds")
    assert keeps_the_facts(reference, faithful)
    assert not keeps_the_facts(reference, summary)  # every name and number kept, few of the words
    assert not keeps_the_facts(reference, lost_number)
    assert not keeps_the_facts(reference, reference)
