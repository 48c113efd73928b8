"""Artifacts stored before evaluation/ was split into rooms name their types by the old module paths: ZenML must
still load those types, as the same classes the steps now return."""

import pytest
from zenml.utils import source_utils

from llm_engineering.evaluation.generation.answers import GenerationStats
from llm_engineering.evaluation.judging.pairwise import PairwiseReport
from llm_engineering.evaluation.report.summary import EvaluationSummary
from llm_engineering.evaluation.trust.judge_check import TrustChecks
from llm_engineering.evaluation.trust.label_agreement import LabelAgreement
from llm_engineering.infrastructure.publishing import PublishReceipt


@pytest.mark.parametrize("stored, cls", [
    ("llm_engineering.evaluation.publishing.PublishReceipt", PublishReceipt),
    ("llm_engineering.evaluation.summary.EvaluationSummary", EvaluationSummary),
    ("llm_engineering.evaluation.judge_check.TrustChecks", TrustChecks),
    ("llm_engineering.evaluation.pairwise.PairwiseReport", PairwiseReport),
    ("llm_engineering.evaluation.label_agreement.LabelAgreement", LabelAgreement),
    ("llm_engineering.evaluation.generation.GenerationStats", GenerationStats),
])
def test_an_artifact_type_stored_under_its_old_module_loads_as_the_class_the_steps_return(stored, cls):
    assert source_utils.load(stored) is cls


def test_only_the_moved_names_resolve():
    with pytest.raises(ModuleNotFoundError):
        source_utils.load("llm_engineering.evaluation.no_such_module.Thing")
    with pytest.raises(AttributeError):
        source_utils.load("llm_engineering.evaluation.generation.NoSuchThing")
