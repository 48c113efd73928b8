"""Command-line entry point: parse flags, pick a config, call a pipeline, print the summary.

One subcommand per job (`evaluate`, `rescore`, `publish`, `export-settings`, `snapshot`). The
flags of the earlier single command (`--run-evaluation --rescore` & co.) are still accepted
without a subcommand and dispatch to the same work.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Optional

import click
from click.core import ParameterSource

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = ROOT / "configs" / "evaluating.yaml"

EPILOG = """
\b
Examples:
  python tools/run.py evaluate --limit 10
  python tools/run.py evaluate --dataset data.jsonl --model smollm2-135m --model org/my-model
  python tools/run.py rescore --only-failed   # re-judge the latest stored evaluations' failed rows
  python tools/run.py publish                 # push the latest stored results again
  python tools/run.py export-settings         # .env -> ZenML secret `settings` (remote steps)
  python tools/run.py snapshot evaluating-sagemaker --config configs/evaluating_sagemaker.yaml

\b
Each command's --help shows its options and more examples.

\b
Legacy flags, still accepted without a command (the options of `evaluate` go with them):
  python tools/run.py --run-evaluation [--config F] [--model M] [--limit N] ...   = evaluate
  python tools/run.py --run-evaluation --rescore [--only-failed] [--from-hub R]   = rescore
  python tools/run.py --run-evaluation --publish-only                             = publish
  python tools/run.py --export-settings [--run-evaluation ...]                    = export-settings
  python tools/run.py --create-snapshot NAME --config F                           = snapshot NAME
"""


@dataclass(frozen=True)
class Request:
    """What a command asks for; `_execute` does it."""

    mode: Literal["evaluate", "rescore", "publish", "snapshot"]
    config_path: Path = DEFAULT_CONFIG
    models: tuple[str, ...] = ()
    dataset: Optional[str] = None
    limit: Optional[int] = None
    dummy: bool = False
    no_cache: bool = False
    only_failed: bool = False
    from_hub: tuple[str, ...] = ()
    snapshot: Optional[str] = None


def _config_option(hidden: bool = False) -> Callable:
    return click.option(
        "--config", "config_path", type=click.Path(path_type=Path), default=DEFAULT_CONFIG, hidden=hidden,
        show_default=True, help="Run config YAML (ZenML layout: parameters, settings, steps).",
    )


def _cache_option(hidden: bool = False, generates: bool = True) -> Callable:
    help = ("Re-run every step and generate every answer again (ignores answers saved by an interrupted run)."
            if generates else "Re-run every step (ZenML's step cache off).")
    return click.option("--no-cache", is_flag=True, hidden=hidden, help=help)


def _selection_options(hidden: bool = False) -> Callable:
    """--model, --dataset, --limit, --dummy: what is evaluated."""
    options = [
        click.option("--model", "models", multiple=True, hidden=hidden,
                     help="Model alias, local folder or Hub id; repeat to compare models."),
        click.option("--dataset", hidden=hidden,
                     help="Hub dataset id, or a local json/jsonl/parquet/csv file or dataset folder."),
        click.option("--limit", type=click.IntRange(min=1), hidden=hidden, help="Evaluate only the first N rows."),
        click.option("--dummy", is_flag=True, hidden=hidden, help="Evaluate only 10 rows (a quick smoke run)."),
    ]

    def decorate(command: Callable) -> Callable:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


@click.group(invoke_without_command=True, epilog=EPILOG)
@click.option("--run-evaluation", is_flag=True, hidden=True, help="Legacy: run the evaluation pipeline.")
@_config_option(hidden=True)
@_selection_options(hidden=True)
@_cache_option(hidden=True)
@click.option("--rescore", is_flag=True, hidden=True)
@click.option("--only-failed", is_flag=True, hidden=True)
@click.option("--from-hub", "from_hub", multiple=True, metavar="REPO", hidden=True)
@click.option("--publish-only", is_flag=True, hidden=True)
@click.option("--export-settings", is_flag=True, hidden=True)
@click.option("--create-snapshot", metavar="NAME", hidden=True)
@click.pass_context
def main(ctx: click.Context, run_evaluation: bool, rescore: bool, publish_only: bool, export_settings: bool,
         create_snapshot: Optional[str], **options: Any) -> None:
    """Evaluate LLMs: vLLM batch generation, an LLM judge, tracked ZenML artifacts."""
    if ctx.invoked_subcommand is not None:
        given = [p.opts[0] for p in ctx.command.params
                 if ctx.get_parameter_source(p.name) is ParameterSource.COMMANDLINE]
        if given:
            raise click.UsageError(f"{', '.join(given)}: options go after the command, e.g. "
                                   f"`python tools/run.py {ctx.invoked_subcommand} --help`.")
        return
    # The legacy form: flags only, checked as the single command of earlier versions did.
    if export_settings:
        _prepare_environment()
        _export_settings()
        if not (run_evaluation or create_snapshot):
            return
    if not (run_evaluation or create_snapshot):
        raise click.UsageError("Nothing to do: name a command (evaluate, rescore, publish, export-settings, "
                               "snapshot; see --help), or pass --run-evaluation.")
    if create_snapshot and (rescore or publish_only):
        raise click.UsageError("--create-snapshot stores the evaluation pipeline: not with --rescore or --publish-only.")
    if (options["only_failed"] or options["from_hub"]) and not rescore:
        raise click.UsageError("--only-failed and --from-hub go with --rescore.")
    mode = "snapshot" if create_snapshot else "publish" if publish_only else "rescore" if rescore else "evaluate"
    _execute(Request(mode, snapshot=create_snapshot, **options))


@main.command(epilog="""
\b
Examples:
  python tools/run.py evaluate --limit 10 --no-cache
  python tools/run.py evaluate --dataset data.jsonl --model smollm2-135m --model org/my-model
  python tools/run.py evaluate --config configs/evaluating_sagemaker.yaml
""")
@_config_option()
@_selection_options()
@_cache_option()
def evaluate(**options: Any) -> None:
    """Generate answers with each model, publish them, judge them, summarize."""
    _execute(Request("evaluate", **options))


@main.command(epilog="""
\b
Examples:
  python tools/run.py rescore                 # the latest stored generations
  python tools/run.py rescore --only-failed   # only rows of the latest evaluations without a valid verdict
  python tools/run.py rescore --from-hub me/SmolLM2-135M-Instruct-results --from-hub me/other-results
""")
@_config_option()
@click.option("--only-failed", is_flag=True,
              help="Judge only the rows of the latest evaluations without a valid verdict, and merge.")
@click.option("--from-hub", "from_hub", multiple=True, metavar="REPO",
              help="Judge the answers published in this Hub dataset repo (repeatable).")
@_cache_option(generates=False)
def rescore(**options: Any) -> None:
    """Judge stored answers again with the config's judge: no generation, no inference."""
    if options["only_failed"] and options["from_hub"]:
        raise click.UsageError("--only-failed judges the latest stored evaluations again, --from-hub published "
                               "answers: pass one of them.")
    _execute(Request("rescore", **options))


@main.command(epilog="""
\b
Examples:
  python tools/run.py publish
  python tools/run.py publish --config configs/evaluating_sagemaker.yaml   # to the Hub, as that config says
""")
@_config_option()
@_cache_option(generates=False)
def publish(**options: Any) -> None:
    """Publish the latest stored results again (after a failed push); run nothing else."""
    _execute(Request("publish", **options))


@main.command("export-settings", epilog="""
\b
Examples:
  python tools/run.py export-settings
  python tools/run.py evaluate --config configs/evaluating_sagemaker.yaml   # its steps read the secret
""")
def export_settings_command() -> None:
    """Store the settings of .env / the environment as the ZenML secret `settings`, for remote steps."""
    _prepare_environment()
    _export_settings()


@main.command(epilog="""
\b
Examples:
  python tools/run.py snapshot evaluating-sagemaker --config configs/evaluating_sagemaker.yaml
  python tools/run.py snapshot smoke --limit 10
""")
@click.argument("name")
@_config_option()
@_selection_options()
@_cache_option()
def snapshot(name: str, **options: Any) -> None:
    """Store the configured evaluation as the ZenML snapshot NAME instead of running it.

    Rerun it from the dashboard on a remote stack.
    """
    _execute(Request("snapshot", snapshot=name, **options))


def _prepare_environment() -> None:
    # ZenML's analytics post synchronously to the internet, which this pipeline never needs.
    os.environ.setdefault("ZENML_ANALYTICS_OPT_IN", "false")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # keep progress bars readable
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def _ensure_zenml_repository() -> None:
    from zenml.client import Client

    if not (ROOT / ".zen").exists():
        Client.initialize(root=ROOT)


def _execute(request: Request) -> None:
    """Load and check the config, run the pipeline the request names, report; errors become CLI messages."""
    _prepare_environment()
    from llm_engineering.evaluation.config import ConfigError
    from llm_engineering.evaluation.dataset import DatasetError
    from llm_engineering.evaluation.models import ModelError
    from llm_engineering.evaluation.similarity import SimilarityError
    from llm_engineering.infrastructure.zenml_runs import NoStoredResults, failed_steps_message
    from llm_engineering.preflight import check_run
    from llm_engineering.run_config import apply_overrides, load_run_config

    try:
        run_config = load_run_config(request.config_path)
        config = apply_overrides(run_config.evaluation, list(request.models), request.dataset, request.limit,
                                 request.dummy, fresh=request.no_cache)
        _ensure_zenml_repository()
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
        run = _launch(config, options, request)
    except (ConfigError, DatasetError, ModelError, NoStoredResults, SimilarityError) as error:
        raise click.ClickException(str(error)) from None
    except RuntimeError as error:
        if "Pipeline run has failed" not in str(error):
            raise
        raise click.ClickException(
            f"{failed_steps_message()}\nEvery finished step is stored and cached, and every generated answer is saved: "
            f"fix the cause and run the same command again (it resumes), or use --rescore to judge the "
            f"stored generations again."
        ) from None
    except KeyboardInterrupt:
        click.echo(
            "\nInterrupted. Every answer generated so far is saved: run the same command again to generate "
            "only the missing ones (without --no-cache, which starts afresh).", err=True,
        )
        sys.exit(130)
    _report(run.id)


def _launch(config: Any, options: dict[str, Any], request: Request) -> Any:
    """Run the pipeline of the request's mode on its stored inputs."""
    from llm_engineering.infrastructure.zenml_runs import latest_answers_to_rescore, latest_results_to_publish
    from pipelines.evaluating import evaluating, publishing, rescoring

    if request.mode == "publish":
        stored, source_run = latest_results_to_publish()
        click.echo(f"Publishing {len(stored['results_ids'])} stored artifact(s) of run {source_run}")
        return publishing.with_options(**options)(config=config, **stored)
    if request.from_hub:
        click.echo(f"Scoring answers published in {', '.join(request.from_hub)}")
        return rescoring.with_options(**options)(config=config, generation_stats=[], hub_repos=list(request.from_hub))
    if request.mode == "rescore":
        stored, source_run = latest_answers_to_rescore(request.only_failed)
        click.echo(f"Re-scoring {len(stored['answers_ids'])} stored artifact(s) of run {source_run}")
        return rescoring.with_options(**options)(config=config, **stored)
    return evaluating.with_options(**options)(config=config)


def _export_settings() -> None:
    """Store .env / environment settings as the ZenML secret the remote configs list."""
    from llm_engineering.settings import SETTINGS_SECRET, export_settings, get_settings

    _ensure_zenml_repository()
    try:
        keys = export_settings(get_settings(), SETTINGS_SECRET)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    # Names only: the values are secrets.
    click.echo(f"Stored {len(keys)} setting(s) in the ZenML secret '{SETTINGS_SECRET}': {', '.join(keys)}")
    click.echo(f"Run configs that list `secrets: [{SETTINGS_SECRET}]` give their steps these values.")


def _report(run_id: Any) -> None:
    """Print the summary table, write the JSON report, say where results were published."""
    from llm_engineering.infrastructure.zenml_runs import run_results
    from llm_engineering.settings import get_settings

    run_name, summary, receipts = run_results(run_id)
    if summary is not None:
        report = get_settings().reports_dir / f"{run_name}.json"
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps({"run": run_name, **summary.model_dump()}, indent=2))
        _print_summary(summary, run_name, report.resolve())
    for receipt in receipts:
        click.echo(f"Published {receipt.stage} of {receipt.repo}: {receipt.hub_url or receipt.local_path}")
    failed = sorted({r.hub_error for r in receipts if r.hub_error})
    if failed:
        raise click.ClickException("\n".join(failed))


def _print_summary(summary: Any, run_name: str, report: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    # report_text holds every sentence the CLI, HTML report and cards share.
    from llm_engineering.evaluation.report_text import TABLE_HEADER, table_rows, trust_lines

    table = Table(title=f"Evaluation summary · run {run_name} · judge {summary.judge_model}")
    for name in TABLE_HEADER:
        table.add_column(name)
    for row in table_rows(summary):
        table.add_row(*row)
    # Wide enough for the table when output goes to a log rather than a terminal.
    Console(width=None if sys.stdout.isatty() else 160).print(table)
    for line in trust_lines(summary):
        click.echo(line)
    click.echo(f"JSON report: {report}")


if __name__ == "__main__":
    main()
