"""LLMBar's Metrics and Reference strategies (Zeng et al., 2024) for an offline judge, measured with judge-bench:
before judging, the judge writes something of its own for each instruction, and the rubric shows it beside the
answer it scores.

- `metrics`: at most three questions that a good answer to this instruction must satisfy (LLMBar's metrics prompt);
- `reference`: the judge's own answer to the instruction.

It writes a copy of a pairs file (JSONL or CSV in, JSONL out) whose `reference` column holds what the judge wrote
(greedy, once per distinct instruction), to be scored with the matching rubric of benchmarks/judge_studies/rubrics/ (the
instruction-following rubric with the written text in its prompt):

    .venv/bin/python -m benchmarks.judge_studies.judge_self_written --pairs ../shared/judge-labels/llmbar-natural.jsonl \
        --write metrics --out outputs/llmbar-metrics.jsonl
    python tools/run.py judge-bench --pairs outputs/llmbar-metrics.jsonl --judge qwen2.5-coder-1.5b \
        --rubric benchmarks/judge_studies/rubrics/instruction-following-metrics.yaml

Only judge-bench's pointwise ways read the rubric's text as meant (its pairwise prompts show the column as a
reference answer).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

METRICS_SYSTEM = (
    "You are a helpful assistant in evaluating the quality of the outputs for a given instruction. Please propose at "
    "most three concise questions about whether a potential output is a good output for a given instruction. Another "
    "assistant will evaluate different aspects of the output by answering all the questions. Rules: (1) prioritize "
    "whether the output honestly, precisely and closely executes the instruction; (2) an output should not contain "
    "more or less than what the instruction asks for."
)
METRICS_USER = (
    "# Instruction:\n{instruction}\n\n# Requirements for your output:\n(1) The questions should specifically target the "
    "given instruction instead of general standards, so they may revolve around its key points.\n(2) Output the "
    "questions directly, nothing else.\n(3) Each question on its own line, starting with a dash."
)
WRITERS = {
    "metrics": (METRICS_SYSTEM, METRICS_USER, 120),
    "reference": ("You are a helpful assistant.", "{instruction}", 300),
}


@click.command()
@click.option("--pairs", "pairs_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option("--write", "kind", type=click.Choice(sorted(WRITERS)), required=True)
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--judge", "judge_model", default="qwen2.5-coder-1.5b")
def main(pairs_path: Path, kind: str, out_path: Path, judge_model: str) -> None:
    from vllm import SamplingParams

    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.evaluation.trust.human_pairs import load_pairs
    from llm_engineering.infrastructure.vllm_engine import EnginePool
    from llm_engineering.settings import get_settings

    pairs = load_pairs(pairs_path)  # a bad file stops here, with judge-bench's message
    instructions = sorted({pair.instruction for pair in pairs})
    system, user, max_tokens = WRITERS[kind]
    conversations = [[{"role": "system", "content": system}, {"role": "user", "content": user.format(instruction=i)}]
                     for i in instructions]
    pool = EnginePool()
    try:
        llm = pool.get(resolve_model(judge_model, get_settings().MODEL_CACHE_DIR).path, EngineConfig())
        started = time.perf_counter()
        outputs = llm.chat(conversations, SamplingParams(temperature=0, max_tokens=max_tokens, seed=0))
        seconds = time.perf_counter() - started
    finally:
        pool.release()
    written = {i: o.outputs[0].text.strip() for i, o in zip(instructions, outputs)}
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text("".join(json.dumps(pair.model_dump(exclude={"line"}) | {"reference": written[pair.instruction]}) + "\n"
                                for pair in pairs))
    click.echo(f"{judge_model} wrote {kind} for {len(instructions)} instructions in {seconds:.0f} s: {out_path}")


if __name__ == "__main__":
    main()
