"""`judge-bench`: the library measures the judge; this prints the table and where the reports are."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Optional

import click

from tools.execution import _is_process_stdout, _release_engines, prepare_environment


def judge_bench(*, pairs_path: Path, config_path: Path, limit: Optional[int], half: Optional[int],
                judge_model: Optional[str], rubric: Optional[str], verbose: bool) -> None:
    """Run the judge benchmark (in a CLI process with library output in the log, as `evaluate`); the click command's
    options, by name."""
    from llm_engineering.evaluation.config_base import ConfigError
    from llm_engineering.evaluation.trust.human_pairs import PairsError
    from llm_engineering.evaluation.report.judge_bench import BENCH_HEADER, bench_cost_line, bench_rows, bench_title
    from llm_engineering.evaluation.models import ModelError
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
            config, choices = bench_config(config_path, judge_model, rubric)
            for line in choices:
                click.echo(line)
            # The process's engine pool, as a pipeline run's steps use it: in a test session, its engine is reused.
            report, path = run_judge_bench(pairs_path, config, ENGINE_POOL, limit=limit,
                                           reports_dir=get_settings().reports_dir, half=half)
        except (ConfigError, PairsError, ModelError) as error:
            raise click.ClickException(str(error)) from None
        finally:
            if _is_process_stdout():  # a CLI process; a test session's engine goes on serving its other tests
                _release_engines()
    print_blocks([table(bench_title(report), BENCH_HEADER, bench_rows(report)), bench_cost_line(report),
                  f"JSON report: {path}", f"HTML report: {path.with_suffix('.html')}"])
    if run_log is not None:
        click.echo(f"Log (library warnings, engine output): {run_log.path.resolve()}", err=True)
