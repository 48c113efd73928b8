"""Pipeline wiring only: which step feeds which."""

from typing import Optional

from zenml import pipeline
from zenml.client import Client

from llm_engineering.evaluation.config import EvaluationConfig
from llm_engineering.evaluation.generation import GenerationStats
from steps.evaluating import (
    evaluate_answers,
    generate_answers,
    load_published_results,
    load_test_split,
    publish_results,
    summarize,
)


def _score_publish_summarize(
    config: EvaluationConfig, answers: list, stats: list, after: Optional[list] = None,
    only_failed: bool = False,
) -> None:
    evaluations = [
        evaluate_answers(rows, judge=config.judge, engine=config.engine, only_failed=only_failed, after=after)
        for rows in answers
    ]
    for rows in evaluations:  # as the original: answers, then answers with verdicts
        publish_results(rows, publish=config.publish, dataset=config.dataset, sampling=config.sampling)
    summarize(evaluations, stats, judge=config.judge)


@pipeline(name="evaluating")
def evaluating(config: EvaluationConfig) -> None:
    """Load the test split, generate answers per model, publish them, judge them, summarize."""
    test_split = load_test_split(dataset=config.dataset, prompt=config.prompt)
    # The step operator and its settings go to every model's generation step, and only there
    # (a run config's `steps.generate_answers` would reach the first model's step alone).
    generate = generate_answers.with_options(**config.generation_step.step_options())
    generations, stats, published = [], [], []
    for model in config.models:
        answers, model_stats = generate(
            test_split, model=model, sampling=config.sampling, engine=config.engine, prompt=config.prompt,
            resume=config.resume,
        )
        published.append(
            publish_results(answers, publish=config.publish, dataset=config.dataset, sampling=config.sampling)
        )
        generations.append(answers)
        stats.append(model_stats)
    # Answers are stored (and published) before the judge can fail.
    _score_publish_summarize(config, generations, stats, after=published)


@pipeline(name="rescoring")
def rescoring(
    config: EvaluationConfig,
    generation_stats: list[GenerationStats],
    answers_ids: Optional[list[str]] = None,
    hub_repos: Optional[list[str]] = None,
    only_failed: bool = False,
) -> None:
    """Judge stored answers again: no generation engine, no inference.

    `answers_ids` name `generations` artifacts, or, with `only_failed`, previous `evaluations`
    artifacts whose rows without a valid verdict are judged again and merged. `hub_repos`
    read published answers from Hub dataset repos instead (scoring on another machine).
    """
    answers = [Client().get_artifact_version(artifact_id) for artifact_id in answers_ids or []]
    answers += [load_published_results(repo_id=repo, split=config.dataset.split) for repo in hub_repos or []]
    _score_publish_summarize(config, answers, generation_stats, only_failed=only_failed)


@pipeline(name="publishing")
def publishing(config: EvaluationConfig, results_ids: list[str]) -> None:
    """Publish stored results again (after a failed push), without re-running anything."""
    for artifact_id in results_ids:
        publish_results(Client().get_artifact_version(artifact_id), publish=config.publish, dataset=config.dataset)
