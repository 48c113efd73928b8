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


def _run_pipeline(pipeline: Any, zenml_options: dict, no_cache: bool, **parameters: Any) -> Any:
    """Run with ZenML's own options from the config file (settings, steps, run_name...)."""
    import yaml

    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        yaml.safe_dump(zenml_options, handle)
    try:
        configured = pipeline.with_options(config_path=handle.name)
        if no_cache:
            configured = configured.with_options(enable_cache=False)
        return configured(**parameters)
    finally:
        os.unlink(handle.name)


def _print_summary(summary: Any, run_name: str, report: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    from llm_engineering.evaluation.summary import TABLE_HEADER, table_rows

    table = Table(title=f"Evaluation summary · run {run_name} · judge {summary.judge_model}")
    for name in TABLE_HEADER:
        table.add_column(name)
    for row in table_rows(summary):
        table.add_row(*row)
    # Wide enough for the table when output goes to a log rather than a terminal.
    Console(width=None if sys.stdout.isatty() else 160).print(table)
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
@click.option("--no-cache", is_flag=True, help="Re-run every step instead of reusing cached results.")
@click.option("--rescore", is_flag=True, help="Judge the latest stored generations again, without generating.")
@click.option(
    "--only-failed", is_flag=True,
    help="With --rescore: judge only the rows of the latest evaluations without a valid verdict, and merge.",
)
@click.option("--from-hub", "from_hub", multiple=True, metavar="REPO",
              help="With --rescore: judge the answers published in this Hub dataset repo (repeatable).")
@click.option("--publish-only", is_flag=True, help="Publish the latest stored results again; run nothing else.")
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
) -> None:
    """Evaluate LLMs: vLLM batch generation, an LLM judge, tracked ZenML artifacts."""
    if not run_evaluation:
        raise click.UsageError("Nothing to do: pass --run-evaluation (see --help).")
    if (only_failed or from_hub) and not rescore:
        raise click.UsageError("--only-failed and --from-hub go with --rescore.")
    _prepare_environment()
    from llm_engineering.evaluation.config import ConfigError, apply_overrides, load_run_config
    from llm_engineering.evaluation.dataset import DatasetError
    from llm_engineering.evaluation.models import ModelError
    from llm_engineering.infrastructure.zenml_runs import NoStoredResults

    try:
        run_config = load_run_config(config_path)
        config = apply_overrides(run_config.evaluation, list(models), dataset, limit, dummy)
        _preflight(config, generate=not (rescore or publish_only), judge=not publish_only)
        _ensure_zenml_repository()
        run = _launch(config, run_config.zenml_options, no_cache, rescore, only_failed, from_hub, publish_only)
    except (ConfigError, DatasetError, ModelError, NoStoredResults) as error:
        raise click.ClickException(str(error)) from None
    except RuntimeError as error:
        if "Pipeline run has failed" not in str(error):
            raise
        raise click.ClickException(
            f"{error} (its error is logged above). Every finished step is stored and cached: "
            f"fix the cause and run the same command again, or use --rescore to judge the stored "
            f"generations again."
        ) from None
    _report(run.id)


def _preflight(config: Any, generate: bool, judge: bool) -> None:
    """Stop before any work on settings or model names that cannot work (converts the embedded model once)."""
    from llm_engineering.evaluation.config import check_judge_settings, check_publish_settings
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.settings import get_settings

    settings = get_settings()
    check_publish_settings(config.publish, settings)
    if generate and config.engine.backend == "ray":
        from llm_engineering.infrastructure.ray_engine import check_ray_installed

        check_ray_installed()
    names = set(config.models) if generate else set()
    if judge:
        check_judge_settings(config.judge, settings)
        if config.judge.backend == "vllm":
            names.add(config.judge.model)
    for name in names:
        resolve_model(name, settings.MODEL_CACHE_DIR)


def _launch(config: Any, zenml_options: dict, no_cache: bool, rescore: bool, only_failed: bool,
            from_hub: tuple[str, ...], publish_only: bool) -> Any:
    """Pick the pipeline and its stored inputs for the mode asked for, and run it."""
    from llm_engineering.infrastructure.zenml_runs import NoStoredResults, latest_evaluations, latest_generations
    from pipelines.evaluating import evaluating, publishing, rescoring

    if publish_only:
        try:
            results, source_run = latest_evaluations()
        except NoStoredResults:
            results, _, source_run = latest_generations()
        click.echo(f"Publishing {len(results)} stored artifact(s) of run {source_run}")
        return _run_pipeline(publishing, zenml_options, no_cache, config=config,
                             results_ids=[str(a.id) for a in results])
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
