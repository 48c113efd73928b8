"""`judge.model: auto`: the judge this machine can run at a cost the default run accepts.

The default judge is the packaged Qwen2.5-Coder-1.5B-Instruct: its report card tells right answers from
wrong ones. On a GPU, and on a CPU with fast native bf16, it runs in minutes. On a CPU without it (AVX2
only) the 1.5B judge runs in float32 at many times that cost, so `auto` takes SmolLM2-135M instead, a judge
with no signal, and the run says so in the first line of its summary (`trust_text.judge_headline`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.infrastructure.cpu_tuning import engine_dtype, native_bf16_flags, runs_on_cpu

AUTO = "auto"
SIGNAL_JUDGE = "qwen2.5-coder-1.5b"  # measured with signal on the report card and on human labels
SMOKE_JUDGE = "smollm2-135m"  # measured without signal; for smoke runs and tests


@dataclass(frozen=True)
class JudgeChoice:
    model: str
    reason: str


def _cpu_dtype() -> tuple[str, str]:
    # The CPU's own capability, whatever engine.dtype says for generation.
    return engine_dtype("auto", True, native_bf16_flags())


def choose_judge(on_cpu: bool | None = None, cpu_dtype: Callable[[], tuple[str, str]] = _cpu_dtype) -> JudgeChoice:
    """What `judge.model: auto` runs for an in-process judge (always in this process, whatever engine.backend
    generates with), and why; `cpu_dtype` says what dtype this CPU runs fastest and why (`engine_dtype`)."""
    on_cpu = runs_on_cpu() if on_cpu is None else on_cpu
    if not on_cpu:
        return JudgeChoice(SIGNAL_JUDGE, "a GPU runs the 1.5B judge in seconds")
    dtype, why = cpu_dtype()
    if dtype == "bfloat16":
        return JudgeChoice(SIGNAL_JUDGE, f"{why}: the 1.5B judge runs in bf16 here")
    return JudgeChoice(SMOKE_JUDGE, f"{why}: the 1.5B judge would run in float32 here, at many times the cost "
                                    f"(benchmarks/README.md, 'The default judge on an AVX2-only CPU'); set "
                                    f"judge.model: qwen2.5-coder-1.5b to take it anyway")


def resolve_auto_judge(judge: JudgeConfig, on_cpu: bool | None = None,
                       cpu_dtype: Callable[[], tuple[str, str]] = _cpu_dtype) -> tuple[JudgeConfig, str | None]:
    """`judge` with `model: auto` replaced by this machine's choice, and a line saying what was chosen and why
    (None when the judge names its model)."""
    if judge.model != AUTO:
        return judge, None
    choice = choose_judge(on_cpu, cpu_dtype)
    return judge.model_copy(update={"model": choice.model}), f"Judge {choice.model} (judge.model: auto): {choice.reason}."
