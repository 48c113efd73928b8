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
    config: EvaluationConfig, generations: list, stats: list, after: Optional[list] = None
) -> None:
    evaluations = [
        evaluate_answers(answers, judge=config.judge, engine=config.engine, after=after)
        for answers in generations
    ]
    summarize(evaluations, stats)


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
    config: EvaluationConfig, generations_ids: list[str], generation_stats: list[GenerationStats]
) -> None:
    """Judge and summarize stored `generations` artifacts again: no generation engine, no inference."""
    generations = [Client().get_artifact_version(artifact_id) for artifact_id in generations_ids]
    _score_and_summarize(config, generations, generation_stats)
