"""Finding stored runs and artifacts in the ZenML store (for re-scoring and reports)."""

from __future__ import annotations

from typing import Any, Optional

from llm_engineering.evaluation import columns as col

_DONE = {"completed", "cached"}


class NoStoredGenerations(LookupError):
    """There is no completed generation to re-score."""


def _status(step: Any) -> str:
    return str(getattr(step.status, "value", step.status)).lower()


def generation_artifacts(run: Any) -> Optional[tuple[list[Any], list[Any]]]:
    """(generations, generation_stats) artifact versions of a run's generation steps, if all finished."""
    steps = [s for name, s in run.steps.items() if name.startswith("generate_answers")]
    if not steps or any(_status(s) not in _DONE for s in steps):
        return None
    steps.sort(key=lambda s: s.name)
    return (
        [s.outputs[col.GENERATIONS][0] for s in steps],
        [s.outputs[col.GENERATION_STATS][0] for s in steps],
    )


def latest_generations(pipeline_name: str = "evaluating") -> tuple[list[Any], list[Any], str]:
    """The newest run's finished generations: (artifact versions, loaded generation stats, run name).

    A run counts once all its generation steps finished, even if a later step failed.
    """
    from zenml.client import Client

    runs = Client().list_pipeline_runs(
        pipeline=pipeline_name, sort_by="desc:created", size=50, hydrate=True
    )
    for run in runs.items:
        found = generation_artifacts(run)
        if found:
            return found[0], [stats.load() for stats in found[1]], run.name
    raise NoStoredGenerations(
        f"No '{pipeline_name}' run with finished generation steps was found in the ZenML store; "
        f"run `python tools/run.py --run-evaluation` first."
    )


def step_output(run: Any, step_name: str, output: str) -> Any:
    """Load one output artifact of a finished run."""
    return run.steps[step_name].outputs[output][0].load()
