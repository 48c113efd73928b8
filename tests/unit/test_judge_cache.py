"""The judge cache: verdicts not asked twice, failures not kept, keys that follow the judge's settings, a damaged
cache moved aside."""

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.cache import JudgeCache
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.judging.scoring import score_answers
from tests.support.judges import GOOD, ScriptedJudge, answers

HANDBOOK = load_rubric("handbook")


def test_cached_verdicts_are_not_asked_again_and_failures_are_not_cached(tmp_path):
    cache = JudgeCache(tmp_path / "cache")
    first = ScriptedJudge([GOOD, "not json", GOOD])
    score_answers(answers(3), Judge((first,), HANDBOOK, cache))
    assert len(first.asked) == 3 and len(cache) == 2
    second = ScriptedJudge([GOOD])
    evaluations = score_answers(answers(3), Judge((second,), HANDBOOK, cache))
    assert second.asked == [first.asked[1]]  # only the row that failed
    assert evaluations[col.JUDGE_CACHED] == [True, False, True]
    assert evaluations[col.score("accuracy")] == [2, 2, 2]


def test_a_cache_opened_not_to_be_read_asks_every_verdict_again_and_stores_the_new_ones(tmp_path):
    score_answers(answers(2), Judge((ScriptedJudge([GOOD, GOOD]),), HANDBOOK, JudgeCache(tmp_path / "cache")))
    refreshed = ScriptedJudge([GOOD, GOOD])
    evaluations = score_answers(answers(2), Judge((refreshed,), HANDBOOK, JudgeCache(tmp_path / "cache", read=False)))
    assert len(refreshed.asked) == 2 and evaluations[col.JUDGE_CACHED] == [False, False]  # --no-cache: nothing read
    again = ScriptedJudge([])
    assert score_answers(answers(2), Judge((again,), HANDBOOK, JudgeCache(tmp_path / "cache")))[col.JUDGE_CACHED] == [True, True]


def test_cache_key_changes_with_judge_settings(tmp_path):
    cache = JudgeCache(tmp_path / "cache")
    score_answers(answers(1), Judge((ScriptedJudge([GOOD]),), HANDBOOK, cache))
    other = ScriptedJudge([GOOD])
    other.cache_namespace = lambda reply_schema: {"backend": "scripted", "temperature": 1.0}
    score_answers(answers(1), Judge((other,), HANDBOOK, cache))
    assert len(other.asked) == 1


def test_a_damaged_judge_cache_is_moved_aside_with_a_warning_and_a_fresh_one_used(tmp_path, caplog):
    folder = tmp_path / "cache"
    first = JudgeCache(folder)
    first.set("k", {"reply": 1})
    first.close()
    (folder / "cache.db").write_bytes(b"this is not a database " * 200)  # damaged, as by a full disk or a bad copy
    with caplog.at_level("WARNING"):
        cache = JudgeCache(folder)
    (aside,) = tmp_path.glob("cache.damaged-*")
    assert f"moved aside to {aside}" in caplog.text and "verdicts are asked again" in caplog.text
    assert cache.get("k") is None and len(cache) == 0  # nothing is read from the damaged file
    cache.set("k", {"reply": 2})
    assert cache.get("k") == {"reply": 2}
    cache.close()
