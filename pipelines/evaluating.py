"""Pipeline wiring only: which step feeds which."""

from typing import Optional

from zenml import pipeline
from zenml.client import Client

from llm_engineering.evaluation.config import EvaluationConfig
from llm_engineering.evaluation.generation import GenerationStats
from steps.evaluating import (
    evaluate_answers,
    generate_answers,
    load_test_split,
    publish_results,
    summarize,
)


def _score_and_summarize(
    config: EvaluationConfig, generations: list, stats: list, after: Optional[list] = None,
    only_failed: bool = False,
) -> None:
    evaluations = [
        evaluate_answers(answers, judge=config.judge, engine=config.engine, only_failed=only_failed, after=after)
        for answers in generations
    ]
    summarize(evaluations, stats, judge=config.judge)


@pipeline(name="evaluating")
def evaluating(config: EvaluationConfig) -> None:
    """Load the test split, generate answers per model, publish them, judge them, summarize."""
    test_split = load_test_split(dataset=config.dataset, prompt=config.prompt)
    generations, stats, published = [], [], []
    for model in config.models:
        answers, model_stats = generate_answers(
            test_split, model=model, sampling=config.sampling, engine=config.engine, prompt=config.prompt
        )
        published.append(publish_results(
            answers, model=model, publish=config.publish, dataset=config.dataset, sampling=config.sampling
        ))
        generations.append(answers)
        stats.append(model_stats)
    # Answers are published (stored twice over) before the judge can fail.
    _score_and_summarize(config, generations, stats, after=published)


@pipeline(name="rescoring")
def rescoring(
    config: EvaluationConfig,
    answers_ids: list[str],
    generation_stats: list[GenerationStats],
    only_failed: bool = False,
) -> None:
    """Judge and summarize stored answers again: no generation engine, no inference.

    `answers_ids` name `generations` artifacts, or, with `only_failed`, previous `evaluations`
    artifacts whose rows without a valid verdict are judged again and merged.
    """
    answers = [Client().get_artifact_version(artifact_id) for artifact_id in answers_ids]
    _score_and_summarize(config, answers, generation_stats, only_failed=only_failed)
