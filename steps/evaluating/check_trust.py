from typing import Annotated

from datasets import Dataset
from zenml import log_metadata, step

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeCheckConfig, JudgeConfig, SimilarityConfig
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.samples import first_samples
from llm_engineering.evaluation.stored.trust import TrustChecks
from llm_engineering.evaluation.trust.card import run_judge_check
from llm_engineering.evaluation.trust.notes import trust_notes
from llm_engineering.evaluation.trust.similarity import check_similarity, get_embedder
from llm_engineering.evaluation.turns import answered, first_turns, with_references
from llm_engineering.infrastructure.judge_backends import open_judge
from llm_engineering.settings import get_settings
from steps.engine_pool import ENGINE_POOL


@step
def check_trust(
    rows: Dataset,
    *,
    judge: JudgeConfig,
    engine: EngineConfig,
    judge_check: JudgeCheckConfig,
    similarity: SimilarityConfig,
) -> Annotated[TrustChecks, col.TRUST_CHECKS]:
    """How far the scores can be trusted: the judge check and the similarity metric's own check.

    `rows` are any model's answers (they carry each instruction and its reference); of several answers per
    prompt, the first (the checks pair a row with other prompts' rows); of conversations, the first turns with a
    reference (a later turn reads only after the conversation before it). Rows without a reference are left out of
    the checks; where fewer than two rows have one, the judge check pairs each row's own answer with another row's
    answer (the mismatch tier alone), and the notes say which checks could not be made.
    """
    rows = first_turns(first_samples(rows))
    referenced = with_references(rows) if col.REFERENCE in rows.column_names else rows.select([])
    checks = TrustChecks(notes=trust_notes(len(rows), len(referenced), bool(judge_check.rows), similarity.enabled))
    from_answers = len(referenced) < 2
    checked = answered(rows) if from_answers else referenced
    if judge_check.rows and len(checked) < 2:
        checks.notes.append(f"judge check skipped: it needs at least 2 rows with an answer, the run has {len(checked)}")
    elif judge_check.rows:
        settings = get_settings()
        with open_judge([judge], engine, settings=settings, pool=ENGINE_POOL) as bound:
            # The similarity metric is among the card's rules where the run measures it.
            embedder = get_embedder(similarity.batch_size) if similarity.enabled else None
            checks.judge = run_judge_check(checked, bound, judge_check, from_answers=from_answers, embedder=embedder)
    if similarity.enabled and len(referenced) >= 2:
        checks.similarity = check_similarity(referenced, get_embedder(similarity.batch_size), judge_check.seed)
    metadata = {}
    if checks.judge:
        metadata["judge_check"] = checks.judge.metadata()
    if checks.similarity:
        metadata["similarity_check"] = {"rate": checks.similarity.reference_higher.rate,
                                        "ci": checks.similarity.reference_higher.ci, "rows": checks.similarity.rows}
    if checks.notes:
        metadata["notes"] = checks.notes
    if metadata:
        log_metadata(metadata=metadata)
    return checks
