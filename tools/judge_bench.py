"""`judge-bench`: the library measures the judge; this prints the table and where the reports are."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable, Optional

import click

from tools.execution import _is_process_stdout, _release_engines, prepare_environment


def calibration_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--calibration`, `--target-agreement` and `--risk`: verdicts with a guarantee (`trust.selective`)."""
    for option in reversed([
        click.option("--calibration", type=click.Path(path_type=Path), metavar="FILE", help="Labelled pairs (other "
                     "than --pairs) to find, per way with a confidence, the threshold at which the judge's agreement "
                     "with people is above --target-agreement; --pairs then reports the share of verdicts it keeps and "
                     "their agreement."),
        click.option("--target-agreement", type=click.FloatRange(0.5, 1.0, max_open=True), default=0.8,
                     show_default=True, help="With --calibration: the agreement the kept verdicts must exceed."),
        click.option("--risk", type=click.FloatRange(0.0, 0.5, min_open=True), default=0.1, show_default=True,
                     help="With --calibration: the chance allowed that the threshold's agreement is under the target."),
    ]):
        command = option(command)
    return command


def judge_bench(*, pairs_path: Path, config_path: Path, limit: Optional[int], half: Optional[int],
                judge_model: Optional[str], rubric: Optional[str], verbose: bool,
                judge_served_model: Optional[str] = None,
                calibration: Optional[Path] = None, target_agreement: float = 0.8, risk: float = 0.1) -> None:
    """Run the judge benchmark (in a CLI process with library output in the log, as `evaluate`); the click command's
    options, by name."""
    from llm_engineering.evaluation.config_base import ConfigError
    from llm_engineering.evaluation.models import ModelError
    from llm_engineering.evaluation.report.failures import NO_VERDICT_EXIT_CODE, bench_failure_line, bench_no_verdict_message
    from llm_engineering.evaluation.report.judge_bench import (
        BENCH_HEADER,
        SELECTIVE_HEADER,
        bench_cost_line,
        bench_rows,
        bench_title,
        selective_rows,
        selective_title,
    )
    from llm_engineering.evaluation.trust.human_pairs import PairsError
    from llm_engineering.judge_bench_run import bench_config, run_judge_bench
    from llm_engineering.run_report import print_blocks, table
    from llm_engineering.settings import get_settings
    from steps.engine_pool import ENGINE_POOL

    prepare_environment()
    run_log = None
    with ExitStack() as stack:
        if _is_process_stdout() and not verbose:
            from tools.console import quiet_console

            run_log = stack.enter_context(quiet_console(get_settings().logs_dir))
        try:
            config, choices = bench_config(config_path, judge_model, rubric, judge_served_model)
            for line in choices:
                click.echo(line)
            # The process's engine pool, as a pipeline run's steps use it: in a test session, its engine is reused.
            report, path = run_judge_bench(pairs_path, config, ENGINE_POOL, limit=limit,
                                           reports_dir=get_settings().reports_dir, half=half, calibration=calibration,
                                           target_agreement=target_agreement, risk=risk)
        except (ConfigError, PairsError, ModelError) as error:
            raise click.ClickException(str(error)) from None
        finally:
            if _is_process_stdout():  # a CLI process; a test session's engine goes on serving its other tests
                _release_engines()
    selective = [table(selective_title(report), SELECTIVE_HEADER, selective_rows(report))] if report.selective else []
    failures = [line] if (line := bench_failure_line(report)) else []
    print_blocks([table(bench_title(report), BENCH_HEADER, bench_rows(report)), bench_cost_line(report), *failures,
                  *selective, f"JSON report: {path}", f"HTML report: {path.with_suffix('.html')}"])
    if run_log is not None:
        click.echo(f"Log (library warnings, engine output): {run_log.path.resolve()}", err=True)
    if message := bench_no_verdict_message(report):
        click.echo(message, err=True)
        sys.exit(NO_VERDICT_EXIT_CODE)
