"""Pipeline wiring only: which step feeds which."""

from typing import Any, Optional

from zenml import pipeline
from zenml.client import Client
from zenml.config import CachePolicy

from llm_engineering.code_version import CACHE_FUNC
from llm_engineering.engine_policy import frees_engine_after
from llm_engineering.evaluation.stored.generation import GenerationStats
from llm_engineering.run_config import EvaluationConfig
from llm_engineering.settings import get_settings
from steps.evaluating import (
    check_labels,
    check_trust,
    compare_pairwise,
    evaluate_answers,
    generate_answers,
    load_published_results,
    load_test_split,
    publish_results,
    summarize,
    write_checklists,
)
from steps.evaluating.generate_answers import FREE_ENGINE

# Every pipeline keys its cached steps by the product's code too (`llm_engineering.code_version`).
CODE_VERSIONED = CachePolicy(cache_func=CACHE_FUNC)


def _score_publish_summarize(
    config: EvaluationConfig, answers: list, stats: list, *, after: Optional[list] = None,
    only_failed: bool = False, samplings: Optional[list] = None, checklists: Any = None,
) -> None:
    if checklists is None and config.panel[0].resolved_rubric().checklist is not None:
        # Written once from the first model's rows (each row's id, instruction, reference), for every model.
        checklists = write_checklists(answers[0], judge=config.panel[0], engine=config.engine,
                                      writer=config.checklists.writer,
                                      from_reference=config.checklists.from_reference, after=after)
    evaluations = [
        evaluate_answers(rows, judges=config.panel, engine=config.engine, only_failed=only_failed,
                         similarity=config.similarity, jury=config.jury, checklists=checklists, measures=config.measures,
                         after=after)
        for rows in answers
    ]
    # After every verdict, so a judge engine that is not the generation model loads once.
    checks = None
    if config.judge_check.rows or config.similarity_measured:
        # The similarity metric's own check only where the run measures it.
        similarity = config.similarity.model_copy(update={"enabled": config.similarity_measured})
        checks = check_trust(evaluations[0], judge=config.panel[0], engine=config.engine,
                               judge_check=config.judge_check, similarity=similarity, after=evaluations)
    labels = None
    if config.labels is not None:  # the judge scores exactly the labelled answers, with its engine still loaded
        labels = check_labels(evaluations, labels=config.labels, judge=config.panel[0], engine=config.engine,
                              after=evaluations)
    pairwise = None
    if config.pairwise.enabled and len(evaluations) > 1:
        pairwise = compare_pairwise(evaluations, judge=config.panel[0], engine=config.engine,
                                    method=config.pairwise.method, human_labels=config.labels, after=evaluations)
    # Each model's figures are computed once, in the summary: its cards read them there.
    summary = summarize(evaluations, stats, judges=config.panel, checks=checks, pairwise=pairwise, jury=config.jury,
                        labels=labels, human_labels=config.labels, pass_score=config.pass_score)
    samplings = samplings or [config.sampling] * len(evaluations)
    for rows, sampling in zip(evaluations, samplings):  # as the original: answers, then with verdicts and checks
        publish_results(rows, publish=config.publish, dataset=config.dataset, sampling=sampling, checks=checks,
                        pairwise=pairwise, summary=summary)


@pipeline(name="evaluating", cache_policy=CODE_VERSIONED)
def evaluating(config: EvaluationConfig) -> None:
    """Load the test split, generate answers per model, publish them, judge them, summarize."""
    test_split = load_test_split(dataset=config.dataset, prompt=config.prompt,
                                 reference_required_by=config.reference_required_by)
    # The step operator and its settings go to every model's generation step, and only there
    # (a run config's `steps.generate_answers` would reach the first model's step alone).
    generate = generate_answers.with_options(**config.generation_step.step_options())
    generations, stats, published = [], [], []
    samplings = [config.sampling_for(model) for model in config.models]  # a variant has its own
    for index, (model, sampling) in enumerate(zip(config.models, samplings)):
        # A base and its LoRA adapters get one engine config (LoRA on), so they share one engine.
        free_engine = frees_engine_after(config, index, get_settings().MODEL_CACHE_DIR)
        answers, model_stats = generate.with_options(extra={FREE_ENGINE: free_engine})(
            test_split, model=model, sampling=sampling, engine=config.engine_for(model), prompt=config.prompt,
            resume=config.resume,
        )
        published.append(publish_results(answers, publish=config.publish, dataset=config.dataset, sampling=sampling))
        generations.append(answers)
        stats.append(model_stats)
    # Answers are stored (and published) before the judge can fail.
    _score_publish_summarize(config, generations, stats, after=published, samplings=samplings)


@pipeline(name="rescoring", cache_policy=CODE_VERSIONED)
def rescoring(
    config: EvaluationConfig,
    generation_stats: list[GenerationStats],
    *,
    answers_ids: Optional[list[str]] = None,
    hub_repos: Optional[list[str]] = None,
    only_failed: bool = False,
    checklists_id: Optional[str] = None,
) -> None:
    """Judge stored answers again: no generation engine, no inference.

    `answers_ids` name `generations` artifacts, or, with `only_failed`, previous `evaluations`
    artifacts whose rows without a valid verdict are judged again and merged. `hub_repos`
    read published answers from Hub dataset repos instead (scoring on another machine). `checklists_id`: the
    source run's `checklists`, for a checklist rubric.
    """
    answers = [Client().get_artifact_version(artifact_id) for artifact_id in answers_ids or []]
    answers += [load_published_results(repo_id=repo, split=config.dataset.split) for repo in hub_repos or []]
    # The source run's checklists, reused as they are (not written again); none stored: written from the answers.
    reads_checklists = checklists_id and config.panel[0].resolved_rubric().checklist is not None
    checklists = Client().get_artifact_version(checklists_id) if reads_checklists else None
    _score_publish_summarize(config, answers, generation_stats, only_failed=only_failed, checklists=checklists)


@pipeline(name="publishing", cache_policy=CODE_VERSIONED)
def publishing(
    config: EvaluationConfig, results_ids: list[str], checks_id: Optional[str] = None, pairwise_id: Optional[str] = None,
    summary_id: Optional[str] = None,
) -> None:
    """Publish stored results again (after a failed push), without re-running anything.

    `checks_id`, `pairwise_id` and `summary_id` name the source run's scoring checks, pairwise comparisons and
    summary, whose facts and scores go on the cards as in the original run.
    """
    checks = Client().get_artifact_version(checks_id) if checks_id else None
    pairwise = Client().get_artifact_version(pairwise_id) if pairwise_id else None
    summary = Client().get_artifact_version(summary_id) if summary_id else None
    for artifact_id in results_ids:
        publish_results(Client().get_artifact_version(artifact_id), publish=config.publish, dataset=config.dataset,
                        checks=checks, pairwise=pairwise, summary=summary)
