"""The embedded in-process judge on the real engine: a score-first check's scores alone are those of whole
verdicts, and every verdict on a sample of the embedded split is valid.

The first asks for SmolLM2 in float32: the session's engine where `dtype: auto` runs float32 (a CPU without fast
bf16), an engine of its own elsewhere. The second builds the judge `auto` picks (the 1.5B: its int8 copy on a CPU
with fast bf16 and VNNI, float32 on an AVX2-only CPU) everywhere."""


import pytest

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeCheckConfig
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import load_rubric
from steps.engine_pool import ENGINE_POOL
from tests.support.session_engine import auto_dtype
from tests.support.small_run import SMALL

pytestmark = [pytest.mark.slow, pytest.mark.own_engine(where_auto_is_bf16=True)]


def test_a_score_first_judge_check_asking_for_scores_alone_gets_the_scores_of_whole_verdicts():
    """The check asks a score-first judge for its first score alone (`first_score_schema`): with the real
    engine, each reference's score and expected score must be those of the whole verdict for the same prompt."""
    from llm_engineering.evaluation.config import DatasetConfig, JudgeConfig
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.generation.dataset import read_test_split
    from llm_engineering.evaluation.judging.scoring import score_answers
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.evaluation.trust.card import run_judge_check
    from llm_engineering.infrastructure.judge_backends import build_judge
    from llm_engineering.settings import get_settings

    score_first = load_rubric("handbook-score-first")
    judge_config = JudgeConfig.model_validate({**SMALL["judge"], "rubric": "handbook-score-first", "cache": False})
    split = read_test_split(DatasetConfig())
    # float32: in bf16 the logits move with the batch's shape (12 prompts in the check, 6 whole verdicts here) by more
    # than the claim allows (seen with AMX kernels: expected 1.140 against 1.162); the claim is about the prompt. The
    # session's engine config where `auto` is float32 here, so that the session's engine serves it.
    engine = EngineConfig() if auto_dtype() == "float32" else EngineConfig(dtype="float32")
    judge = build_judge(judge_config, engine, get_settings(), ENGINE_POOL)
    llm = ENGINE_POOL.get(resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR).path, engine)
    # Both asked on a cold prefix cache: KV blocks cached by earlier tests' prompts, computed in other batches,
    # differ from fresh ones in the last bits, which can move an expected score.
    llm.reset_prefix_cache()
    check = run_judge_check(split, Judge((judge,), score_first), JudgeCheckConfig(rows=6, threshold=0.7, tiers=["mismatch"]))
    checked = split.filter(lambda row: row[col.ID] in {p.id for p in check.details})
    rows = checked.add_column(col.ANSWER, checked[col.REFERENCE]).add_column(col.MODEL_ID, ["reference"] * len(checked))
    llm.reset_prefix_cache()
    whole = score_answers(rows, Judge((judge,), score_first))
    by_id = {row[col.ID]: row for row in whole}
    assert len(by_id) == 6 and all(row[col.JUDGE_ERROR] is None for row in whole)
    for pair in check.details:
        row = by_id[pair.id]
        assert row[col.analysis("accuracy")]  # the whole verdict has its analysis; the check's reply had none
        assert pair.reference_accuracy == row[col.score("accuracy")]
        assert pair.reference_expected == pytest.approx(row[col.expected("accuracy")], abs=0.01)  # batch-dependent float noise


@pytest.mark.own_engine  # the 1.5B judge on every CPU
def test_the_default_judge_returns_a_valid_verdict_for_every_row_of_a_sample_of_the_embedded_split():
    """Under the default rubric and judge settings, on every twelfth row of the shipped split (its reference answers
    as the answers judged), every verdict parses and validates. Four verdicts, all valid, catch a judge that fails a
    row in four or in ten more often than eight with one failure allowed did (0.32 against 0.37 and 0.66 against 0.81
    chance of missing it), at half the time: on a core held to AVX2 the float32 judge reads some 20 prompt tokens a
    second. (`make evaluate` judges all 48: benchmarks/README.md records its failed verdicts, 0 of 48 in the last
    runs.)"""
    from llm_engineering.evaluation.config import DatasetConfig, JudgeConfig
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.generation.dataset import read_test_split
    from llm_engineering.evaluation.judging.scoring import score_answers
    from llm_engineering.infrastructure.judge_backends import open_judge
    from llm_engineering.settings import get_settings

    split = read_test_split(DatasetConfig())
    split = split.select(range(0, len(split), 12))
    rows = split.add_column(col.ANSWER, split[col.REFERENCE]).add_column(col.MODEL_ID, ["reference"] * len(split))
    settings, config = get_settings(), JudgeConfig()
    # A KV cache of 1 GiB (the default 2): 4 prompts of some 660 tokens and their replies need a fifth of it in float32,
    # and the 1.5B in float32 (6.6 GiB of weights on an AVX2-only CPU) leaves the other test worker that much more memory.
    with open_judge([config], EngineConfig(cpu_kvcache_space_gib=1), settings=settings, pool=ENGINE_POOL) as judge:
        evaluations = score_answers(rows, judge)
    errors = [error for error in evaluations[col.JUDGE_ERROR] if error]
    print(f"valid verdicts under the default rubric: {len(rows) - len(errors)}/{len(rows)}")
    assert len(rows) == 4 and not errors, errors
