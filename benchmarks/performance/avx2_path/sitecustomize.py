"""Run the project on a CPU with AVX-512 as on an AVX2-only one, as far as the engine allows: put this folder on
PYTHONPATH and every Python process (the CLI, vLLM's engine processes) starts with

- torch's own kernels held to AVX2 (`ATEN_CPU_CAPABILITY=avx2`), oneDNN's and MKL's too (`ONEDNN_MAX_CPU_ISA`,
  `MKL_ENABLE_INSTRUCTIONS`), set before torch is imported;
- torch's CPU probes answering no AVX-512, no AVX512-BF16 and no AMX, which is how vLLM 0.32 picks its kernels
  (`vllm._C_AVX2` instead of `vllm._C`) and its CPU attention's code path;
- the project's own reading of the CPU's flags (`LLM_EVAL_CPU_FLAGS`, read by `infrastructure.cpu_tuning`) without
  avx512_bf16 and amx_bf16, so that the dtype (float32) and `judge.model: auto` are chosen as on such a CPU.

    PYTHONPATH=benchmarks/performance/avx2_path make evaluate

What it cannot change: the cache sizes, clocks and memory of this machine, and instructions a library picks at build
time. Measure again on an AVX2-only machine where one is at hand.
"""

import os

os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")
os.environ.setdefault("MKL_ENABLE_INSTRUCTIONS", "AVX2")
os.environ.setdefault("LLM_EVAL_CPU_FLAGS", "avx avx2 fma f16c")


class _HoldTorchToAvx2:
    """After torch is imported, its CPU probes answer as on an AVX2-only CPU."""

    def find_spec(self, name, path=None, target=None):
        # Every spec of torch is patched: `importlib.util.find_spec("torch")` (a library asking whether torch is there)
        # asks for one too, before the import itself.
        if name != "torch":
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        original = spec.loader.exec_module

        def exec_module(module):
            original(module)
            for probe in ("_is_avx512_supported", "_is_avx512_bf16_supported", "_is_avx512_vnni_supported",
                          "_is_amx_tile_supported", "_is_amx_fp16_supported"):
                if hasattr(module.cpu, probe):
                    setattr(module.cpu, probe, lambda: False)

        spec.loader.exec_module = exec_module
        return spec


import sys  # noqa: E402

sys.meta_path.insert(0, _HoldTorchToAvx2())
