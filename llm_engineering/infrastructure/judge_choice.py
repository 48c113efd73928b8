"""`judge.model: auto`: the judge this machine can run at a cost the default run accepts.

The default judge is the packaged Qwen2.5-Coder-1.5B-Instruct: its report card tells right answers from wrong ones.
On a GPU it runs in seconds, in the model's dtype. On a CPU with fast native bf16 it runs in bf16, and where the CPU
also has int8 dot products (VNNI or AMX) with int8 weights and activations (W8A8, `qwen2.5-coder-1.5b-int8`): the
judge stages 23% shorter with the report card within a pair on every tier (benchmarks/README.md, "What the judge
costs"). On a CPU without native bf16 (AVX2 only) the 1.5B judge runs in float32, at about twice the bf16 cost (18
minutes of judge stages on 2 cores): slow, but a judge with signal (SmolLM2-135M, which has none, is for smoke runs
and tests, named: `judge.model: smollm2-135m`). The reason is the first line of the run's summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.infrastructure.cpu_tuning import engine_dtype, fast_int8_flags, native_bf16_flags, runs_on_cpu

AUTO = "auto"
SIGNAL_JUDGE = "qwen2.5-coder-1.5b"  # measured with signal on the report card and on human labels
INT8_JUDGE = "qwen2.5-coder-1.5b-int8"  # the same judge, W8A8: its report card and labels inside the bf16 one's
SMOKE_JUDGE = "smollm2-135m"  # measured without signal; for smoke runs and tests


@dataclass(frozen=True)
class JudgeChoice:
    model: str
    reason: str


def _cpu_dtype() -> tuple[str, str]:
    # The CPU's own capability, whatever engine.dtype says for generation.
    return engine_dtype("auto", True, native_bf16_flags())


def choose_judge(on_cpu: bool | None = None, cpu_dtype: Callable[[], tuple[str, str]] = _cpu_dtype,
                 int8_flags: Callable[[], list[str]] = fast_int8_flags) -> JudgeChoice:
    """What `judge.model: auto` runs for an in-process judge (always in this process, whatever engine.backend
    generates with), and why; `cpu_dtype` says what dtype this CPU runs fastest and why (`engine_dtype`), `int8_flags`
    which of its flags give fast int8 dot products (`fast_int8_flags`)."""
    on_cpu = runs_on_cpu() if on_cpu is None else on_cpu
    if not on_cpu:
        return JudgeChoice(SIGNAL_JUDGE, "a GPU runs the 1.5B judge in seconds")
    dtype, why = cpu_dtype()
    if dtype == "bfloat16" and (vnni := int8_flags()):
        return JudgeChoice(INT8_JUDGE, f"{why}, and int8 dot products ({', '.join(vnni)}): the 1.5B judge runs with "
                                       f"int8 weights here, its judge stages 23% shorter than in bf16 with its report "
                                       f"card within a pair on every tier (benchmarks/README.md, 'What the judge costs'); "
                                       f"judge.model: {SIGNAL_JUDGE} takes the bf16 weights")
    if dtype == "bfloat16":
        return JudgeChoice(SIGNAL_JUDGE, f"{why}: the 1.5B judge runs in bf16 here")
    return JudgeChoice(SIGNAL_JUDGE, f"{why}: the 1.5B judge runs in float32 here, its judge stages about "
                                     f"18 minutes on 2 cores (benchmarks/README.md, 'What the judge costs'); "
                                     f"judge.model: {SMOKE_JUDGE} runs a smoke test in minutes, with no signal")


def resolve_auto_judge(judge: JudgeConfig, on_cpu: bool | None = None,
                       cpu_dtype: Callable[[], tuple[str, str]] = _cpu_dtype,
                       int8_flags: Callable[[], list[str]] = fast_int8_flags) -> tuple[JudgeConfig, str | None]:
    """`judge` with `model: auto` replaced by this machine's choice, and a line saying what was chosen and why
    (None when the judge names its model)."""
    if judge.model != AUTO:
        return judge, None
    choice = choose_judge(on_cpu, cpu_dtype, int8_flags)
    return judge.model_copy(update={"model": choice.model}), f"Judge {choice.model} (judge.model: auto): {choice.reason}."
