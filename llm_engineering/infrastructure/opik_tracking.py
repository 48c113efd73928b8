"""Opik tracing of judge verdicts, and the scoring run as an Opik experiment.

Off unless settings name an Opik server (OPIK_URL_OVERRIDE, self-hosted) or an API key
(OPIK_API_KEY, Comet): then nothing is imported, sent or waited for.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.rubric import Rubric, judge_messages
from llm_engineering.evaluation.samples import sample_of
from llm_engineering.settings import Settings

logger = logging.getLogger(__name__)


def _client(settings: Settings) -> Any:
    import opik

    return opik.Opik(
        project_name=settings.OPIK_PROJECT_NAME,
        workspace=settings.OPIK_WORKSPACE,
        host=settings.OPIK_URL_OVERRIDE,
        api_key=settings.OPIK_API_KEY.get_secret_value() if settings.OPIK_API_KEY else None,
        _show_misconfiguration_message=False,
    )


def _flush(client: Any, what: str) -> None:
    """Send what the client queued; opik reports a lost message by returning False, not by raising."""
    if client.flush() is False:
        raise RuntimeError(f"Opik did not confirm every one of the {what} sent ({client.last_flush_result})")


def log_scoring(evaluations: Dataset, rubric: Rubric, settings: Settings, experiment_name: str) -> Optional[int]:
    """Trace every judged row (prompt, raw reply, scores as feedback) and group the traces in
    an experiment over a dataset of the rows. Returns the number of traces, or None when Opik
    is not configured. Opik trouble is logged, never raised: scores are already stored."""
    if not settings.opik_enabled:
        return None
    try:
        client = _client(settings)
        traces = []
        for row in evaluations:
            scores = [
                {"name": name, "value": row[col.score(name)]} for name in rubric.names if row.get(col.score(name)) is not None
            ] + [
                {"name": f"{name}_expected", "value": row[col.expected(name)]}
                for name in rubric.names if row.get(col.expected(name)) is not None
            ]
            trace = client.trace(
                name="judge",
                input={"messages": judge_messages(rubric, row[col.INSTRUCTION], row[col.ANSWER], row.get(col.REFERENCE),
                                                  row.get(col.HISTORY))},
                output={"reply": row[col.JUDGE_RAW], "error": row[col.JUDGE_ERROR]},
                metadata={"row_id": row[col.ID], "sample": sample_of(row), "model": row[col.MODEL_ID],
                          "judge": row[col.JUDGE_MODEL],
                          "prompt_tokens": row[col.JUDGE_PROMPT_TOKENS],
                          "completion_tokens": row[col.JUDGE_COMPLETION_TOKENS],
                          "cached": row[col.JUDGE_CACHED]},
                feedback_scores=scores or None,
                tags=["llm-judge"],
            )
            traces.append(trace.id)
        _flush(client, "traces")
        dataset = client.get_or_create_dataset(name=f"{experiment_name}-rows")
        dataset.insert([{"row_id": r[col.ID], "sample": sample_of(r), "instruction": r[col.INSTRUCTION],
                         "answer": r[col.ANSWER]} for r in evaluations])
        # a prompt's answers (several with sampling.n) are items of their own
        items = {(item["row_id"], item.get("sample", 0)): item["id"] for item in dataset.get_items()}
        experiment = client.create_experiment(dataset_name=dataset.name, name=experiment_name)
        from opik.api_objects.experiment.experiment_item import ExperimentItemReferences

        experiment.insert([
            ExperimentItemReferences(dataset_item_id=items[key], trace_id=trace_id)
            for key, trace_id in zip(((r[col.ID], sample_of(r)) for r in evaluations), traces) if key in items
        ])
        _flush(client, "experiment items")
        return len(traces)
    except Exception as error:  # an observability backend must not fail an evaluation
        logger.warning("Opik logging failed (%s: %s); scores are stored in ZenML regardless.",
                       type(error).__name__, error)
        return 0
