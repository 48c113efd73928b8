"""Command-line entry point: parse flags, pick a config, call a pipeline, print the summary."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

import click

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = ROOT / "configs" / "evaluating.yaml"

EPILOG = """
\b
Examples:
  python tools/run.py --run-evaluation
  python tools/run.py --run-evaluation --limit 10 --no-cache
  python tools/run.py --run-evaluation --dataset data.jsonl --model smollm2-135m --model org/my-model
  python tools/run.py --run-evaluation --rescore          # re-judge the latest stored generations
  python tools/run.py --run-evaluation --rescore --only-failed
  python tools/run.py --run-evaluation --rescore --from-hub me/SmolLM2-135M-Instruct-results
  python tools/run.py --run-evaluation --publish-only     # push the latest stored results again
  python tools/run.py --export-settings                   # .env -> ZenML secret `settings` (remote steps)
  python tools/run.py --run-evaluation --config configs/evaluating_sagemaker.yaml
  python tools/run.py --create-snapshot evaluating-sagemaker --config configs/evaluating_sagemaker.yaml
"""


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


def _run_pipeline(pipeline: Any, zenml_options: dict, no_cache: bool, snapshot: Optional[str] = None,
                  **parameters: Any) -> Any:
    """Run with ZenML's own options from the config file (settings, steps, run_name...).

    With `snapshot`, store the configured run as a named snapshot instead of running it.
    """
    import yaml

    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        yaml.safe_dump(zenml_options, handle)
    try:
        configured = pipeline.with_options(config_path=handle.name)
        if no_cache:
            configured = configured.with_options(enable_cache=False)
        if snapshot:
            configured.prepare(**parameters)
            return configured.create_snapshot(name=snapshot, replace=True)
        return configured(**parameters)
    finally:
        os.unlink(handle.name)


def _print_summary(summary: Any, run_name: str, report: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    from llm_engineering.evaluation.summary import TABLE_HEADER, table_rows, trust_lines

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


@click.command(epilog=EPILOG)
@click.option("--run-evaluation", is_flag=True, help="Run the evaluation pipeline.")
@click.option(
    "--config", "config_path", type=click.Path(path_type=Path), default=DEFAULT_CONFIG,
    show_default=True, help="Run config YAML (ZenML layout: parameters, settings, steps).",
)
@click.option("--model", "models", multiple=True, help="Model alias, local folder or Hub id; repeat to compare models.")
@click.option("--dataset", help="Hub dataset id, or a local json/jsonl/parquet/csv file or dataset folder.")
@click.option("--limit", type=click.IntRange(min=1), help="Evaluate only the first N rows.")
@click.option("--dummy", is_flag=True, help="Evaluate only 10 rows (a quick smoke run).")
@click.option("--no-cache", is_flag=True,
              help="Re-run every step and generate every answer again (ignores answers saved by an interrupted run).")
@click.option("--rescore", is_flag=True, help="Judge the latest stored generations again, without generating.")
@click.option(
    "--only-failed", is_flag=True,
    help="With --rescore: judge only the rows of the latest evaluations without a valid verdict, and merge.",
)
@click.option("--from-hub", "from_hub", multiple=True, metavar="REPO",
              help="With --rescore: judge the answers published in this Hub dataset repo (repeatable).")
@click.option("--publish-only", is_flag=True, help="Publish the latest stored results again; run nothing else.")
@click.option("--export-settings", is_flag=True,
              help="Store the settings of .env / the environment as the ZenML secret `settings`, for remote steps.")
@click.option("--create-snapshot", metavar="NAME",
              help="Store the configured evaluation as a ZenML snapshot NAME (rerun it from the dashboard "
              "on a remote stack) instead of running it.")
def main(
    run_evaluation: bool,
    config_path: Path,
    models: tuple[str, ...],
    dataset: Optional[str],
    limit: Optional[int],
    dummy: bool,
    no_cache: bool,
    rescore: bool,
    only_failed: bool,
    from_hub: tuple[str, ...],
    publish_only: bool,
    export_settings: bool,
    create_snapshot: Optional[str],
) -> None:
    """Evaluate LLMs: vLLM batch generation, an LLM judge, tracked ZenML artifacts."""
    if export_settings:
        _prepare_environment()
        _export_settings()
        if not (run_evaluation or create_snapshot):
            return
    if not (run_evaluation or create_snapshot):
        raise click.UsageError("Nothing to do: pass --run-evaluation (see --help).")
    if create_snapshot and (rescore or publish_only):
        raise click.UsageError("--create-snapshot stores the evaluation pipeline: not with --rescore or --publish-only.")
    if (only_failed or from_hub) and not rescore:
        raise click.UsageError("--only-failed and --from-hub go with --rescore.")
    _prepare_environment()
    from llm_engineering.evaluation.config import ConfigError, apply_overrides, load_run_config
    from llm_engineering.evaluation.dataset import DatasetError
    from llm_engineering.evaluation.models import ModelError
    from llm_engineering.evaluation.similarity import SimilarityError
    from llm_engineering.infrastructure.zenml_runs import NoStoredResults

    try:
        run_config = load_run_config(config_path)
        config = apply_overrides(run_config.evaluation, list(models), dataset, limit, dummy, fresh=no_cache)
        _ensure_zenml_repository()
        _preflight(config, run_config.zenml_options, generate=not (rescore or publish_only), judge=not publish_only)
        if create_snapshot:
            from pipelines.evaluating import evaluating

            snapshot = _run_pipeline(evaluating, run_config.zenml_options, no_cache, snapshot=create_snapshot, config=config)
            click.echo(f"Created snapshot '{snapshot.name}' ({snapshot.id}) of pipeline 'evaluating'. Run it from the "
                       f"dashboard or with `zenml pipeline snapshot run {snapshot.id}` (needs a remote stack).")
            return
        run = _launch(config, run_config.zenml_options, no_cache, rescore, only_failed, from_hub, publish_only)
    except (ConfigError, DatasetError, ModelError, NoStoredResults, SimilarityError) as error:
        raise click.ClickException(str(error)) from None
    except RuntimeError as error:
        if "Pipeline run has failed" not in str(error):
            raise
        raise click.ClickException(
            f"{_failed_steps()}\nEvery finished step is stored and cached, and every generated answer is saved: "
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


def _failed_steps() -> str:
    """The failed steps of the latest run with their errors (ZenML only says which steps failed)."""
    from zenml.client import Client

    run = Client().list_pipeline_runs(sort_by="desc:created", size=1).items[0]
    errors = [f"Step {name} failed: {step.exception_info.message if step.exception_info else 'see the log above'}"
              for name, step in run.steps.items() if str(step.status.value).lower() == "failed"]
    return "\n".join(errors) or f"Run {run.name} failed (its error is logged above)."


def _preflight(config: Any, zenml_options: dict, generate: bool, judge: bool) -> None:
    """Stop before any work on a stack, settings or model names that cannot work (converts the embedded model once)."""
    from llm_engineering.evaluation.config import ConfigError, check_judge_settings, check_publish_settings
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.infrastructure.zenml_stack import check_generation_step, check_secrets
    from llm_engineering.settings import get_settings, settings_from_secrets

    if generate:
        check_generation_step(config.generation_step)
    secrets = zenml_options.get("secrets") or []
    check_secrets(secrets)
    # With secrets, the steps (remote ones) see only the secrets' values, set by ZenML as their
    # environment when each step starts: check those. Steps running in this process read their
    # settings afresh (cache cleared below), with those values in the environment.
    local = get_settings()
    settings = settings_from_secrets(secrets) if secrets else local
    try:
        check_publish_settings(config.publish, settings)
        if judge:
            check_judge_settings(config.judge, settings)
    except ConfigError as error:
        if not secrets:
            raise
        raise ConfigError(f"{error}\nThis config's steps read their settings from the ZenML secret(s) {secrets}: "
                          f"after adding the value, run `python tools/run.py --export-settings`.") from None
    if generate and config.engine.backend == "ray":
        from llm_engineering.infrastructure.ray_engine import check_ray_installed

        check_ray_installed()
    names = set(config.models) if generate else set()
    if judge and config.judge.backend == "vllm":
        names.add(config.judge.model)
    for name in names:
        resolve_model(name, local.MODEL_CACHE_DIR)
    if judge and config.similarity.enabled:
        from llm_engineering.evaluation.similarity import embedding_model_dir

        embedding_model_dir()  # the embedding model's package is installed
    get_settings.cache_clear()


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


def _launch(config: Any, zenml_options: dict, no_cache: bool, rescore: bool, only_failed: bool,
            from_hub: tuple[str, ...], publish_only: bool) -> Any:
    """Pick the pipeline and its stored inputs for the mode asked for, and run it."""
    from llm_engineering.infrastructure.zenml_runs import (
        latest_evaluations,
        latest_generations,
        latest_results_to_publish,
    )
    from pipelines.evaluating import evaluating, publishing, rescoring

    if publish_only:
        stored, source_run = latest_results_to_publish()
        click.echo(f"Publishing {len(stored['results_ids'])} stored artifact(s) of run {source_run}")
        return _run_pipeline(publishing, zenml_options, no_cache, config=config, **stored)
    if from_hub:
        click.echo(f"Scoring answers published in {', '.join(from_hub)}")
        return _run_pipeline(rescoring, zenml_options, no_cache, config=config,
                             generation_stats=[], hub_repos=list(from_hub))
    if rescore:
        generations, stats, source_run = latest_generations()
        answers = generations
        if only_failed:
            answers, source_run = latest_evaluations()
        click.echo(f"Re-scoring {len(answers)} stored artifact(s) of run {source_run}")
        return _run_pipeline(rescoring, zenml_options, no_cache, config=config, generation_stats=stats,
                             answers_ids=[str(a.id) for a in answers], only_failed=only_failed)
    return _run_pipeline(evaluating, zenml_options, no_cache, config=config)


def _report(run_id: Any) -> None:
    """Print the summary table, write the JSON report, say where results were published."""
    from zenml.client import Client

    from llm_engineering.evaluation import columns as col
    from llm_engineering.infrastructure.zenml_runs import step_output
    from llm_engineering.settings import get_settings

    run = Client().get_pipeline_run(run_id)
    if "summarize" in run.steps:
        summary = step_output(run, "summarize", col.EVALUATION_SUMMARY)
        report = get_settings().reports_dir / f"{run.name}.json"
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps({"run": run.name, **summary.model_dump()}, indent=2))
        _print_summary(summary, run.name, report.resolve())
    receipts = [step.outputs[col.PUBLISH_RECEIPT][0].load() for name, step in run.steps.items()
                if name.startswith("publish_results")]
    for receipt in receipts:
        click.echo(f"Published {receipt.stage} of {receipt.repo}: {receipt.hub_url or receipt.local_path}")
    failed = sorted({r.hub_error for r in receipts if r.hub_error})
    if failed:
        raise click.ClickException("\n".join(failed))


if __name__ == "__main__":
    main()
