"""ZenML's overhead: the CLI pipeline end to end vs the same work through the library alone.

    .venv/bin/python -m benchmarks.performance.pipeline_overhead [--rows 40]

Both paths run in a fresh process each (imports, engine start, generation, judging, summary),
with step caching and the judge cache off, on the same rows and settings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

from benchmarks import ROOT


def library_run(rows: int) -> None:
    """Load, generate, judge and build_summary with the library only: no ZenML."""
    from llm_engineering.evaluation.generation import dataset as data
    from llm_engineering.evaluation.generation.answers import answer_test_split
    from llm_engineering.evaluation.judging.scoring import score_answers
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary
    from llm_engineering.infrastructure.engines import open_engine
    from llm_engineering.infrastructure.judge_backends import open_judge
    from llm_engineering.infrastructure.vllm_engine import EnginePool
    from llm_engineering.run_config import EvaluationConfig
    from llm_engineering.settings import get_settings

    config = EvaluationConfig.model_validate({"dataset": {"limit": rows}, "judge": {"cache": False}})
    settings = get_settings()
    split = data.with_prompts(data.read_test_split(config.dataset), config.prompt)
    model = resolve_model(config.models[0], settings.MODEL_CACHE_DIR)
    pool = EnginePool()
    try:
        with open_engine(model.path, config.engine, pool) as engine:
            generations, stats = answer_test_split(engine, split, config.models[0], sampling=config.sampling,
                                                  prompt=config.prompt, max_model_len=config.engine.max_model_len)
        with open_judge([config.judge.model_copy(update={"cache": False})], config.engine, settings=settings,
                        pool=pool) as judge:
            evaluations = score_answers(generations, judge)
    finally:
        pool.release()  # the engine runs in its own process: end it before this one exits
    print(build_summary(SummaryInputs([evaluations], stats=[stats])).models[0].model_dump_json())


def _timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


@click.command()
@click.option("--rows", default=40, show_default=True)
@click.option("--library", is_flag=True, help="Internal: run the library path in this process.")
def main(rows: int, library: bool) -> None:
    if library:
        library_run(rows)
        return
    env = {**os.environ, "VLLM_LOGGING_LEVEL": "ERROR", "ZENML_ANALYTICS_OPT_IN": "false"}
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "run.yaml"
        config.write_text("parameters:\n  judge: {cache: false}\n")
        library = [sys.executable, "-m", "benchmarks.performance.pipeline_overhead", "--library", "--rows", str(rows)]
        library_s = _timed(library, env)
        zenml_s = _timed([sys.executable, "tools/run.py", "--run-evaluation", "--config", str(config),
                          "--limit", str(rows), "--no-cache"], env)
    result = {"rows": rows, "library_s": round(library_s, 1), "zenml_pipeline_s": round(zenml_s, 1),
              "zenml_overhead_fraction": round((zenml_s - library_s) / zenml_s, 3)}
    print(f"| path | seconds |\n|---|---|\n| library only | {result['library_s']} |\n"
          f"| `tools/run.py --run-evaluation` | {result['zenml_pipeline_s']} |\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
