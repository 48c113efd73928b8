"""Finding stored runs and artifacts in the ZenML store: the inputs of a rescore or publish, and reports;
and metadata logged from library code on the step that runs it."""

from __future__ import annotations

import sys
from typing import Any, Optional

from llm_engineering.evaluation import columns as col

_DONE = {"completed", "cached"}


class NoStoredResults(LookupError):
    """There is nothing stored to re-score."""


def _status(step: Any) -> str:
    return str(getattr(step.status, "value", step.status)).lower()


def finished_outputs(run: Any, step_prefix: str, output: str) -> Optional[list[Any]]:
    """The `output` artifact of each of a run's `step_prefix*` steps, if they all finished."""
    steps = sorted((s for name, s in run.steps.items() if name.startswith(step_prefix)), key=lambda s: s.name)
    if not steps or any(_status(s) not in _DONE for s in steps):
        return None
    return [s.outputs[output][0] for s in steps]


def _newest(pipelines: list[str], step_prefix: str, output: str) -> tuple[list[Any], Any]:
    from zenml.client import Client

    client = Client()
    candidates = []
    for name in pipelines:
        try:
            candidates += client.list_pipeline_runs(pipeline=name, sort_by="desc:created", size=50, hydrate=True).items
        except KeyError:
            continue  # that pipeline never ran
    for run in sorted(candidates, key=lambda r: r.created, reverse=True):
        found = finished_outputs(run, step_prefix, output)
        if found:
            return found, run
    raise NoStoredResults(
        f"No run with finished '{step_prefix}' steps was found in the ZenML store; "
        f"run `python tools/run.py --run-evaluation` first."
    )


def latest_generations() -> tuple[list[Any], list[Any], str]:
    """The newest finished generations: (artifact versions, loaded generation stats, run name).

    A run counts once all its generation steps finished, even if a later step failed.
    """
    _, run = _newest(["evaluating"], "generate_answers", col.GENERATIONS)
    return (*generations_of(run), run.name)


def generations_of(run: Any) -> tuple[list[Any], list[Any]]:
    """A run's finished generations: (artifact versions, loaded generation stats)."""
    stats = finished_outputs(run, "generate_answers", col.GENERATION_STATS) or []
    return finished_outputs(run, "generate_answers", col.GENERATIONS) or [], [artifact.load() for artifact in stats]


def latest_evaluations() -> tuple[list[Any], str]:
    """The newest finished evaluations of an evaluating or rescoring run: (artifact versions, run name)."""
    evaluations, run = _newest(["evaluating", "rescoring"], "evaluate_answers", col.EVALUATIONS)
    return evaluations, run.name


def latest_answers_to_rescore(only_failed: bool = False) -> tuple[dict[str, Any], str]:
    """What a rescore judges again, as `rescoring` pipeline arguments; and the source run's name.

    The newest finished generations (with their stats); with `only_failed`, the newest finished
    evaluations instead, whose rows without a valid verdict are judged again.
    """
    generations, stats, source_run = latest_generations()
    answers = generations
    if only_failed:
        answers, source_run = latest_evaluations()
    arguments = {"generation_stats": stats, "answers_ids": [str(artifact.id) for artifact in answers],
                 "only_failed": only_failed}
    from zenml.client import Client

    # A checklist rubric's items, written by the source run: reused, not written again.
    run = Client().get_pipeline_run(source_run)
    if found := finished_outputs(run, "write_checklists", col.CHECKLISTS):
        arguments["checklists_id"] = str(found[0].id)
    return arguments, source_run


def latest_results_to_publish() -> tuple[dict[str, Any], str]:
    """What `--publish-only` publishes again, as `publishing` pipeline arguments; and the source run's name.

    The newest finished evaluations (else generations), with that run's scoring checks, pairwise comparisons and
    summary where it has them, so the republished cards keep those facts and scores.
    """
    try:
        _, run = _newest(["evaluating", "rescoring"], "evaluate_answers", col.EVALUATIONS)
    except NoStoredResults:
        _, run = _newest(["evaluating"], "generate_answers", col.GENERATIONS)
    return results_to_publish(run), run.name


def stored_inputs(mode: str, only_failed: bool = False) -> Optional[tuple[dict[str, Any], str]]:
    """The stored artifacts a `rescore` or `publish` runs on, and their run's name (NoStoredResults where there are
    none); None for a mode that makes its own."""
    if mode == "publish":
        return latest_results_to_publish()
    return latest_answers_to_rescore(only_failed) if mode == "rescore" else None


def results_to_publish(run: Any) -> dict[str, Any]:
    """A finished run's evaluations (else generations), scoring checks, pairwise comparisons and summary (the cards'
    scores), as `publishing` pipeline arguments."""
    results = finished_outputs(run, "evaluate_answers", col.EVALUATIONS) or finished_outputs(
        run, "generate_answers", col.GENERATIONS)
    arguments: dict[str, Any] = {"results_ids": [str(artifact.id) for artifact in results or []]}
    for key, step, output in [("checks_id", "check_trust", col.TRUST_CHECKS),
                              ("pairwise_id", "compare_pairwise", col.PAIRWISE_COMPARISONS),
                              ("summary_id", "summarize", col.EVALUATION_SUMMARY)]:
        if found := finished_outputs(run, step, output):
            arguments[key] = str(found[0].id)
    return arguments


def run_to_compare(reference: str) -> Optional[Any]:
    """The run `--compare-to` names: a run name or id, or `previous` (the newest run with finished
    evaluations; None when there is none yet). Resolved before this run starts."""
    from zenml.client import Client

    if reference == "previous":
        try:
            return _newest(["evaluating", "rescoring"], "evaluate_answers", col.EVALUATIONS)[1]
        except NoStoredResults:
            return None
    try:
        run = Client().get_pipeline_run(reference)
    except KeyError:
        raise NoStoredResults(f"--compare-to {reference}: no such run in the ZenML store; give a run name or id "
                              f"(`zenml pipeline runs list`), or `previous`.") from None
    if not finished_outputs(run, "evaluate_answers", col.EVALUATIONS):
        raise NoStoredResults(f"--compare-to {reference}: run {run.name} has no finished evaluations to compare with.")
    return run


def evaluations_of(run_id: Any) -> tuple[list[Any], str]:
    """A finished run's evaluations, loaded (one dataset per model); and the run's name."""
    from zenml.client import Client

    run = Client().get_pipeline_run(run_id)
    return [artifact.load() for artifact in finished_outputs(run, "evaluate_answers", col.EVALUATIONS) or []], run.name


def step_output(run: Any, step_name: str, output: str) -> Any:
    """Load one output artifact of a finished run."""
    return run.steps[step_name].outputs[output][0].load()


def run_results(run_id: Any) -> tuple[str, Any, list[Any]]:
    """A finished run's name, its evaluation summary (None when it has no summarize step) and publish receipts."""
    from zenml.client import Client

    run = Client().get_pipeline_run(run_id)
    summary = step_output(run, "summarize", col.EVALUATION_SUMMARY) if "summarize" in run.steps else None
    receipts = [step.outputs[col.PUBLISH_RECEIPT][0].load() for name, step in run.steps.items()
                if name.startswith("publish_results")]
    return run.name, summary, receipts


def _latest_run() -> Any:
    from zenml.client import Client

    return Client().list_pipeline_runs(sort_by="desc:created", size=1).items[0]


def latest_run_has_answers() -> bool:
    """Whether the latest run left answers a `rescore` can judge: an evaluating run whose generation steps all finished,
    or a run that judged or published stored ones (a failure in `load_test_split` leaves none)."""
    run = _latest_run()
    if run.pipeline is None or run.pipeline.name != "evaluating":
        return True
    return finished_outputs(run, "generate_answers", col.GENERATIONS) is not None


def failed_steps_message() -> str:
    """The failed steps of the latest run with their errors (ZenML only says which steps failed)."""
    run = _latest_run()
    errors = [f"Step {name} failed: {step.exception_info.message if step.exception_info else 'see the log above'}"
              for name, step in run.steps.items() if _status(step) == "failed"]
    return "\n".join(errors) or f"Run {run.name} failed (its error is logged above)."


def log_on_running_step(metadata: dict[str, Any]) -> bool:
    """Log `metadata` on the ZenML step this code runs in; outside a step (a library call, a test), do
    nothing and say so (False)."""
    if "zenml" not in sys.modules:  # no step runs without ZenML loaded: spare seconds of import
        return False
    from zenml import get_step_context, log_metadata

    try:
        get_step_context()
    except RuntimeError:
        return False
    log_metadata(metadata=metadata)
    return True
