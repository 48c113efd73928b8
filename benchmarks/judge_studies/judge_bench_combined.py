"""Two of judge-bench's ways combined, from reports already written (no judge call): does a pair decided by
pointwise expected scores and the averaged preference together agree with people more than either alone?

Each way's signal on a pair, put on one scale without any weight fitted to the labels: the pointwise way's
expected-score difference over the rubric's range, (e1 - e2) / (top - 1), and the averaged preference's
2 P(output 1 better) - 1, both in [-1, 1]; the pair goes to output 1 when their sum is above zero. With two
reports (the same pairs, say two rubrics), the first report's pointwise way and the second's.

    .venv/bin/python -m benchmarks.judge_studies.judge_bench_combined REPORT.json [OTHER_REPORT.json] --top 5 [--other-top 3]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import click


def _pointwise(pair: dict, top: int) -> Optional[float]:
    first, second = pair["expected"] or (None, None)
    return None if first is None or second is None else (first - second) / (top - 1)


def _preference(pair: dict) -> Optional[float]:
    averaged = (pair["preference"] or [None] * 3)[2]
    return None if averaged is None else 2 * averaged - 1


def _agreement(pairs: list[dict], signal) -> str:
    from llm_engineering.evaluation import preference
    from llm_engineering.evaluation.rates import rate, rate_with_ci

    # A report's labels: A, B or tie (1, 2 or 0 in reports written before one Preference).
    labelled = [(p, preference.read(p["label"])) for p in pairs if preference.read(p["label"]) != "tie"]
    right = 0
    for pair, label in labelled:
        value = signal(pair)  # None (a failed verdict) or a tie at 0 counts as a disagreement, as judge-bench counts it
        right += value is not None and preference.compare(value, 0) == label
    figure = rate(right, len(labelled))
    return f"{rate_with_ci(figure.rate, figure.ci)} ({right}/{len(labelled)})"


@click.command()
@click.argument("report", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("other", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--top", type=int, required=True, help="The top of REPORT's rubric scale (its first criterion).")
@click.option("--other-top", type=int, help="The top of OTHER's rubric scale.")
def main(report: Path, other: Optional[Path], top: int, other_top: Optional[int]) -> None:
    pairs = json.loads(report.read_text())["details"]
    lines = {"pointwise": _agreement(pairs, lambda p: _pointwise(p, top)),
             "preference averaged": _agreement(pairs, _preference),
             "pointwise + preference averaged": _agreement(
                 pairs, lambda p: None if None in (_pointwise(p, top), _preference(p)) else _pointwise(p, top) + _preference(p))}
    if other is not None:
        by_id = {p["id"]: p for p in json.loads(other.read_text())["details"]}

        def both(pair: dict) -> Optional[float]:
            mine, theirs = _pointwise(pair, top), _pointwise(by_id[pair["id"]], other_top or top)
            return None if mine is None or theirs is None else mine + theirs

        lines["pointwise of both reports"] = _agreement(pairs, both)
    for name, figure in lines.items():
        click.echo(f"{name}: {figure}")


if __name__ == "__main__":
    main()
