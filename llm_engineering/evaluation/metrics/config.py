"""What a run measures without a judge: the reference metrics (`metrics:`) and the checks every row gets (`checks:`),
validated where the config is read, with the messages a row's own checks get."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

from llm_engineering.evaluation.config_base import Strict
from llm_engineering.evaluation.metrics.check_rows import read_checks
from llm_engineering.evaluation.metrics.checks import Check
from llm_engineering.evaluation.metrics.names import METRICS, SIMILARITY, MetricName


def _once_each(metrics: list[MetricName]) -> list[MetricName]:
    return list(dict.fromkeys(metrics))


def _as_checks(checks: Any) -> Any:
    # Read as a row's checks are, so a bad one is named the same way (ChecksError is a ValueError).
    return read_checks(checks) if checks is None or isinstance(checks, (list, str)) else checks


# The run config's `metrics:` and `checks:` (`run_config.EvaluationConfig`) and the step's `MeasuresConfig`.
Metrics = Annotated[list[MetricName], AfterValidator(_once_each)]
Checks = Annotated[list[Check], BeforeValidator(_as_checks)]
METRICS_HELP = (f"Reference metrics per answer where the row has a reference (--metric NAME, repeatable): "
                f"{', '.join(METRICS)}; [] for none. similarity also needs similarity.enabled.")
CHECKS_HELP = ("Checks of every answer, beside each row's own (the dataset's checks column): a list of "
               "{type, value, ...} (docs/metrics.md).")


def all_metrics() -> list[MetricName]:
    return list(METRICS)


class MeasuresConfig(Strict):
    """The judge-free scores of a run: each reference metric named (all by default), and checks applied to every row
    beside a row's own."""

    metrics: Metrics = Field(default_factory=all_metrics, description=METRICS_HELP)
    checks: Checks = Field(default_factory=list, description=CHECKS_HELP)

    @property
    def similarity(self) -> bool:
        return SIMILARITY in self.metrics
