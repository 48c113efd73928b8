"""What the CLI's commands do: load and check the config, run a pipeline, report the run.

`tools/run.py` parses the command line into a `Request`; `execute` does it. Heavy imports (ZenML,
vLLM, datasets) stay inside the functions, so `--help` starts at once.
"""

from __future__ import annotations

import os
import signal
import sys
from contextlib import ExitStack
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Optional

import click

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = ROOT / "configs" / "evaluating.yaml"
_PROCESS_EXIT = ExitStack()  # what a CLI process keeps open until it ends

if TYPE_CHECKING:
    from llm_engineering.run_overrides import Overrides


def _no_overrides() -> Overrides:
    from llm_engineering.run_overrides import Overrides  # at run time: --help imports nothing heavy

    return Overrides()


@dataclass(frozen=True)
class Request:
    """What a command asks for; `execute` does it."""

    mode: Literal["evaluate", "rescore", "publish", "snapshot"]
    config_path: Path = DEFAULT_CONFIG
    overrides: Overrides = field(default_factory=_no_overrides)  # --model, --dataset, --limit...: the run config's
    no_cache: bool = False
    only_failed: bool = False
    from_hub: tuple[str, ...] = ()
    snapshot: Optional[str] = None
    fail_under: tuple[str, ...] = ()
    max_failed_rate: Optional[float] = None
    compare_to: Optional[str] = None
    fail_on_regression: bool = False
    verbose: bool = False

    @classmethod
    def of(cls, mode: str, **options: Any) -> Request:
        """A command's request from its click options: an option named as a field of `Overrides` goes there (when
        given), the others to the request's own fields."""
        from llm_engineering.run_overrides import Overrides

        names = {f.name for f in fields(Overrides)}
        given = {name: value for name, value in options.items() if name in names and value not in (None, False, ())}
        return cls(mode, overrides=Overrides(**given), **{k: v for k, v in options.items() if k not in names})


def prepare_environment() -> None:
    # ZenML's analytics post synchronously to the internet, which this pipeline never needs.
    os.environ.setdefault("ZENML_ANALYTICS_OPT_IN", "false")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # keep progress bars readable
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def ensure_zenml_repository() -> None:
    from zenml.client import Client

    if not (ROOT / ".zen").exists():
        Client.initialize(root=ROOT)


def _is_process_stdout() -> bool:
    """Whether this command writes to the process's own stdout (a real CLI process, not click's test runner)."""
    try:
        return sys.stdout.fileno() == 1
    except (AttributeError, ValueError, OSError):
        return False


def _hang_up(signum: int, frame: Any) -> None:
    """A closed terminal or SSH session (SIGHUP) stops a run as an orchestrator's SIGTERM does: the step is
    interrupted, every answer saved, the engine shut down (by default, SIGHUP would end the process at once)."""
    signal.raise_signal(signal.SIGTERM)


def handle_hang_up_as_terminate() -> None:
    """SIGHUP handled as SIGTERM (`_hang_up`), unless this process was started to ignore it (nohup)."""
    if signal.getsignal(signal.SIGHUP) == signal.SIG_DFL:
        signal.signal(signal.SIGHUP, _hang_up)


def _release_engines() -> None:
    """Shut down the engine the steps of this process held (cleanly, with the engine's log still captured)."""
    from steps.engine_pool import ENGINE_POOL

    ENGINE_POOL.release()


def execute(request: Request) -> None:
    """Run the request; in a CLI process, with library output in `outputs/logs/<run>.log` unless `verbose`,
    and the engine shut down before the process ends."""
    standalone = _is_process_stdout()
    if standalone and not request.verbose:
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "INFO")  # the log file has room for what vLLM says
    prepare_environment()
    if not standalone:  # click's test runner: the caller's process and engines go on after this
        _execute(request)
        return
    handle_hang_up_as_terminate()
    if request.verbose:
        try:
            _execute(request)
        finally:
            _release_engines()
        return
    from llm_engineering.settings import get_settings
    from tools.console import quiet_console

    # Never closed (and held, or collecting it would close it): output at exit (the engine's shutdown,
    # multiprocessing's resource tracker) goes to the log too.
    run_log = _PROCESS_EXIT.enter_context(quiet_console(get_settings().logs_dir))
    try:
        _execute(request, run_log)
    finally:
        _release_engines()
        click.echo(f"Log (library warnings, engine output): {run_log.path.resolve()}", err=True)


def _execute(request: Request, run_log: Any = None) -> None:
    """Load and check the config, run the pipeline the request names, report; errors become CLI messages."""
    from sqlalchemy.exc import OperationalError

    from llm_engineering.evaluation.config_base import ConfigError
    from llm_engineering.evaluation.generation.dataset import DatasetError
    from llm_engineering.evaluation.models import ModelError
    from llm_engineering.evaluation.trust.similarity import SimilarityError
    from llm_engineering.infrastructure.zenml_runs import (
        NoStoredResults,
        failed_steps_message,
        latest_run_has_answers,
        run_to_compare,
        stored_inputs,
    )
    from llm_engineering.preflight import check_run
    from llm_engineering.run_config import load_run_config, with_judges_chosen
    from llm_engineering.run_overrides import apply_overrides

    try:
        run_config = load_run_config(request.config_path)
        # --no-cache re-runs every step and generates every answer again (not an answer from a checkpoint).
        config = apply_overrides(run_config.evaluation, replace(request.overrides, fresh=request.no_cache))
        if request.mode not in ("publish", "snapshot"):  # a snapshot runs elsewhere: its steps choose there
            config, choices = with_judges_chosen(config)
            for line in choices:
                click.echo(line)
        ensure_zenml_repository()
        # Before this run exists, and before the checks of this machine's state (its free memory): a run named
        # wrong, or nothing stored to rescore or publish, is the user's to fix whatever the machine has free.
        earlier = run_to_compare(request.compare_to) if request.compare_to else None
        if request.compare_to and earlier is None:
            click.echo("--compare-to previous: no earlier run with evaluations yet; nothing to compare with.", err=True)
        inputs = None if request.from_hub else stored_inputs(request.mode, request.only_failed)
        check_run(config, run_config.zenml_options.get("secrets") or [],
                  generate=request.mode in ("evaluate", "snapshot"), judge=request.mode != "publish")
        options = run_config.pipeline_options(no_cache=request.no_cache)
        if request.mode == "snapshot":
            from pipelines.evaluating import evaluating

            configured = evaluating.with_options(**options)
            configured.prepare(config=config)
            stored = configured.create_snapshot(name=request.snapshot, replace=True)
            click.echo(f"Created snapshot '{stored.name}' ({stored.id}) of pipeline 'evaluating'. Run it from the "
                       f"dashboard or with `zenml pipeline snapshot run {stored.id}` (needs a remote stack).")
            return
        run = launch(config, options, request, inputs)
        if run_log is not None:
            run_log.name_after(run.name)
    except (ConfigError, DatasetError, ModelError, NoStoredResults, SimilarityError) as error:
        raise click.ClickException(str(error)) from None
    except RuntimeError as error:
        if "Pipeline run has failed" not in str(error):
            raise
        kept = _KEPT_AFTER_A_FAILED_RUN + (_RESCORE_AFTER_A_FAILED_RUN if latest_run_has_answers() else ".")
        raise click.ClickException(f"{failed_steps_message()}\n{kept}") from None
    except OperationalError as error:
        if "database is locked" not in str(error):
            raise
        raise click.ClickException(_locked_store_message()) from None
    except KeyboardInterrupt:
        click.echo(
            "\nInterrupted. Every answer generated so far is saved: run the same command again to generate "
            "only the missing ones (without --no-cache, which starts afresh).", err=True,
        )
        sys.exit(130)
    summary, comparison = report_run(run.id, earlier.id if earlier is not None else None)
    check_verdicts(summary)
    check_gates(summary, request.fail_under, comparison if request.fail_on_regression else None, request.max_failed_rate)


_KEPT_AFTER_A_FAILED_RUN = (
    "Every finished step is stored and cached, and every generated answer is saved: fix the cause and run the same "
    "command again (it resumes)")
# Only where the failed run's answers are stored: before them, a rescore would judge an earlier run's answers.
_RESCORE_AFTER_A_FAILED_RUN = ", or `python tools/run.py rescore` to judge the stored generations again."


def _locked_store_message() -> str:
    return (f"The ZenML store is locked by another process (a dashboard server or another run writing to it) and "
            f"stayed locked past ZenML's 60 s wait: run the same command again once it is free (it resumes; every "
            f"finished step and every generated answer is kept). Store: {_store_url()}")


def _store_url() -> str:
    """The ZenML store's address, read from the configuration (connecting could wait on the lock again)."""
    from zenml.config.global_config import GlobalConfiguration

    return GlobalConfiguration().store_configuration.url


def check_verdicts(summary: Any) -> None:
    """Exit with `NO_VERDICT_EXIT_CODE` when every verdict of some model failed, the causes on stderr (the run, its
    answers included, is stored already): its scores would mean nothing, whatever the gates say."""
    from llm_engineering.evaluation.report.failures import NO_VERDICT_EXIT_CODE, no_verdict_message

    message = no_verdict_message(summary) if summary is not None else None
    if message:
        click.echo(message, err=True)
        sys.exit(NO_VERDICT_EXIT_CODE)


def check_gates(summary: Any, gates: tuple[str, ...], comparison: Any = None, max_failed_rate: Any = None) -> None:
    """Exit with `GATE_FAILED_EXIT_CODE` and one line per failed gate on stderr; the run is stored already."""
    from llm_engineering.evaluation.report.gates import GATE_FAILED_EXIT_CODE
    from llm_engineering.run_report import gate_failures

    failures, passed = gate_failures(summary, gates, comparison, max_failed_rate)
    for line in failures:
        click.echo(f"GATE FAILED {line}", err=True)
    if failures:
        sys.exit(GATE_FAILED_EXIT_CODE)
    if passed:
        click.echo(passed)


def launch(config: Any, options: dict[str, Any], request: Request, inputs: Optional[tuple[dict[str, Any], str]]) -> Any:
    """Run the pipeline of the request's mode; a rescore or a publish on the stored `inputs` and their run's name."""
    from pipelines.evaluating import evaluating, publishing, rescoring

    if request.from_hub:
        click.echo(f"Scoring answers published in {', '.join(request.from_hub)}")
        return rescoring.with_options(**options)(config=config, generation_stats=[], hub_repos=list(request.from_hub))
    if inputs is None:
        return evaluating.with_options(**options)(config=config)
    stored, source_run = inputs
    if request.mode == "publish":
        click.echo(f"Publishing {len(stored['results_ids'])} stored artifact(s) of run {source_run}")
        return publishing.with_options(**options)(config=config, **stored)
    click.echo(f"Re-scoring {len(stored['answers_ids'])} stored artifact(s) of run {source_run}")
    labelled_on = config.labels.run if config.labels is not None else None
    if labelled_on is not None and labelled_on != source_run:
        click.echo(f"The labels were written on the report of run {labelled_on}, not of {source_run}: the answers "
                   f"they hold are judged as written, against the instructions of {source_run}'s rows")
    return rescoring.with_options(**options)(config=config, **stored)


def export_settings() -> None:
    """Store .env / environment settings as the ZenML secret the remote configs list."""
    from llm_engineering.infrastructure.zenml_stack import where_secrets_are_kept
    from llm_engineering.settings import SETTINGS_SECRET, export_settings, get_settings

    ensure_zenml_repository()
    try:
        keys = export_settings(get_settings(), SETTINGS_SECRET)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    # Names only: the values are secrets.
    click.echo(f"Stored {len(keys)} setting(s) in the ZenML secret '{SETTINGS_SECRET}': {', '.join(keys)}")
    click.echo(f"ZenML keeps their values {where_secrets_are_kept()}.")
    click.echo(f"Run configs that list `secrets: [{SETTINGS_SECRET}]` give their steps these values.")


def report_run(run_id: Any, earlier_id: Any = None) -> tuple[Any, Any]:
    """Print the run's summary (and its comparison with run `earlier_id`), write its reports, say where results
    were published; the summary and the comparison."""
    from llm_engineering.run_report import console_blocks, print_blocks
    from llm_engineering.run_report import report_run as load_and_write
    from llm_engineering.settings import get_settings

    report = load_and_write(run_id, get_settings().reports_dir, earlier_id)
    print_blocks(console_blocks(report))
    for line in report.published:
        click.echo(line)
    if report.publish_errors:
        raise click.ClickException("\n".join(report.publish_errors))
    return report.summary, report.comparison
