"""Artifacts name their types by import path: every stored type lives in `evaluation.stored`, and artifacts stored
under the types' earlier homes (the flat modules before the rooms, the rooms' logic modules before the stored package)
must still load them, as the same classes the steps now return."""

import pytest
from zenml.utils import source_utils

from llm_engineering.evaluation.stored.generation import GenerationStats
from llm_engineering.evaluation.stored.labels import LabelAgreement
from llm_engineering.evaluation.stored.pairwise import PairwiseReport
from llm_engineering.evaluation.stored.publishing import PublishReceipt
from llm_engineering.evaluation.stored.summary import EvaluationSummary
from llm_engineering.evaluation.stored.trust import TrustChecks
from steps.evaluating import check_labels, check_trust, compare_pairwise, generate_answers, publish_results, summarize

STORED = [GenerationStats, LabelAgreement, PairwiseReport, PublishReceipt, EvaluationSummary, TrustChecks]


@pytest.mark.parametrize("stored, cls", [
    # before evaluation/ was split into rooms
    ("llm_engineering.evaluation.publishing.PublishReceipt", PublishReceipt),
    ("llm_engineering.evaluation.summary.EvaluationSummary", EvaluationSummary),
    ("llm_engineering.evaluation.judge_check.TrustChecks", TrustChecks),
    ("llm_engineering.evaluation.pairwise.PairwiseReport", PairwiseReport),
    ("llm_engineering.evaluation.label_agreement.LabelAgreement", LabelAgreement),
    ("llm_engineering.evaluation.generation.GenerationStats", GenerationStats),
    # before the stored types had a package of their own (their logic modules still exist)
    ("llm_engineering.infrastructure.publishing.PublishReceipt", PublishReceipt),
    ("llm_engineering.evaluation.report.summary.EvaluationSummary", EvaluationSummary),
    ("llm_engineering.evaluation.trust.judge_check.TrustChecks", TrustChecks),
    ("llm_engineering.evaluation.judging.pairwise.PairwiseReport", PairwiseReport),
    ("llm_engineering.evaluation.trust.label_agreement.LabelAgreement", LabelAgreement),
    ("llm_engineering.evaluation.generation.answers.GenerationStats", GenerationStats),
])
def test_an_artifact_type_stored_under_an_earlier_home_loads_as_the_class_the_steps_return(stored, cls):
    assert source_utils.load(stored) is cls


def test_the_steps_store_the_types_of_the_stored_package():
    """What a step returns is what ZenML records: its output annotations name the stored package's classes."""
    import typing

    returned = set()
    for step in (generate_answers, compare_pairwise, check_trust, check_labels, publish_results, summarize):
        hints = typing.get_type_hints(step.entrypoint, include_extras=True)["return"]
        for hint in typing.get_args(hints) if typing.get_origin(hints) is tuple else [hints]:
            returned.add(typing.get_args(hint)[0])
    assert set(STORED) <= returned
    assert all(source_utils.resolve(cls).import_path.startswith("llm_engineering.evaluation.stored.") for cls in STORED)


def test_only_the_stored_names_resolve_under_an_old_home():
    with pytest.raises(ModuleNotFoundError):
        source_utils.load("llm_engineering.evaluation.no_such_module.Thing")
    with pytest.raises(AttributeError):
        source_utils.load("llm_engineering.evaluation.generation.NoSuchThing")
    with pytest.raises(AttributeError):  # a logic module that still exists lends no name the stored module lacks
        source_utils.load("llm_engineering.evaluation.report.summary.NoSuchThing")
    # A logic module's own names are its own.
    from llm_engineering.evaluation.report import summary

    assert source_utils.load("llm_engineering.evaluation.report.summary.build_summary") is summary.build_summary
    # Its loader is still its own to the rest of the world (tracebacks and tools ask it for the source).
    assert "def build_summary(" in summary.__loader__.get_source(summary.__name__)
