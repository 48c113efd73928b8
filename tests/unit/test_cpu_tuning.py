"""CPU settings decided at run time: the dtype, the probe that measures bf16, the engine preloads."""

import pytest

from tests.support.workers import FIRST_RUN_FILES


@pytest.mark.parametrize(("requested", "on_cpu", "flags", "speedup", "dtype"), [
    ("auto", True, ["avx512_bf16"], 2.8, "bfloat16"),  # AVX-512 BF16 that pays (AMD Zen 4 measured 2.8x)
    ("auto", True, ["amx_bf16"], 4.0, "bfloat16"),  # AMX (Sapphire Rapids)
    ("auto", True, ["avx512_bf16"], 0.65, "float32"),  # native but slower (an Intel Xeon without AMX measured 0.65x)
    ("auto", True, [], None, "float32"),  # AVX2 only: bf16 would be emulated; nothing is measured
    ("auto", False, [], None, "auto"),  # GPU: the model's own dtype
    ("float32", True, ["avx512_bf16"], None, "float32"),  # an explicit dtype is kept, nothing measured
])
def test_engine_dtype_follows_the_cpu_unless_set(requested, on_cpu, flags, speedup, dtype):
    from llm_engineering.infrastructure.cpu_tuning import engine_dtype

    def measured() -> float:
        assert speedup is not None, "measured bf16 where the flags or the config already decide"
        return speedup

    chosen, reason = engine_dtype(requested, on_cpu, flags, measured)
    assert chosen == dtype
    if speedup is not None:
        assert flags[0] in reason and f"{speedup:.2f}x" in reason  # the log and generation_stats say why


def test_bf16_speedup_is_measured_on_this_cpu():
    from llm_engineering.infrastructure.cpu_tuning import BF16_MIN_SPEEDUP, bf16_speedup, native_bf16_flags

    first, second = bf16_speedup.__wrapped__(), bf16_speedup.__wrapped__()  # two measurements, uncached
    if not native_bf16_flags():
        # Emulated bf16 (an AVX2-only CPU) ran at 0.004x fp32: a ratio the wrong way round, or none, is far above.
        assert first < 0.5 and second < 0.5, (first, second)
    elif min(first, second) > BF16_MIN_SPEEDUP * 1.25 or max(first, second) < BF16_MIN_SPEEDUP / 1.25:
        # Native bf16 (2.8x on a Zen 4, 0.65x on a Xeon without AMX): clear of the threshold, both decide alike.
        assert (first > BF16_MIN_SPEEDUP) == (second > BF16_MIN_SPEEDUP), (first, second)


def test_the_engine_preload_adds_tcmalloc_and_intel_openmp_once_after_what_is_there(monkeypatch, tmp_path):
    from llm_engineering.infrastructure import cpu_tuning

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libiomp5.so").write_bytes(b"")
    monkeypatch.setattr(cpu_tuning.sys, "prefix", str(tmp_path))
    monkeypatch.setattr(cpu_tuning.ctypes.util, "find_library",
                        lambda name: "libtcmalloc_minimal.so.4" if name == "tcmalloc_minimal" else None)
    iomp = str(tmp_path / "lib" / "libiomp5.so")
    assert cpu_tuning.preloaded_libraries() == f"libtcmalloc_minimal.so.4:{iomp}"
    # The user's own preload stays first; a library already there (by any path) is not added twice.
    assert cpu_tuning.preloaded_libraries("/opt/libx.so:/usr/lib/libtcmalloc_minimal.so.4") == \
        f"/opt/libx.so:/usr/lib/libtcmalloc_minimal.so.4:{iomp}"
    # Neither installed: the preload is what it was.
    monkeypatch.setattr(cpu_tuning.ctypes.util, "find_library", lambda name: None)
    monkeypatch.setattr(cpu_tuning.sys, "prefix", str(tmp_path / "elsewhere"))
    assert cpu_tuning.preloaded_libraries("/opt/libx.so") == "/opt/libx.so"


def test_the_engine_threads_bind_to_the_cores_this_process_may_run_on():
    """Kept to one core (`taskset`, a cpuset, a parent's affinity: `make test`'s workers), the engine binds its
    threads to that core alone, not to core 0 up to the machine's count (a fresh process: this one keeps its cores)."""
    import subprocess
    import sys

    code = ("import os; os.sched_setaffinity(0, {max(os.sched_getaffinity(0))}); "
            "from llm_engineering.evaluation.engine_config import EngineConfig; "
            "from llm_engineering.infrastructure.cpu_tuning import cpu_environment; "
            "print(cpu_environment(EngineConfig())['VLLM_CPU_OMP_THREADS_BIND'], max(os.sched_getaffinity(0)))")
    bound, core = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                 timeout=120).stdout.split()
    assert bound == core


@pytest.mark.parametrize(("workers", "cores", "shares"), [
    (2, [0, 1], [[0], [1]]),  # this project's 2-core machines
    (2, [0, 1, 2, 3, 4], [[0, 1], [2, 3, 4]]),  # the last share takes what is left
    (3, [0, 1], [[0], [1], [0]]),  # more workers than cores: one core each, round robin
])
def test_each_test_worker_keeps_to_its_own_share_of_the_cores(workers, cores, shares):
    from tests.support.workers import worker_cores

    assert [worker_cores(f"gw{index}", workers, cores) for index in range(workers)] == shares


def test_under_xdist_each_file_is_one_unit_of_work_and_the_files_that_read_first_run_one_together():
    from tests.support.workers import work_unit

    assert {work_unit(f"{path}::test_one") for path in FIRST_RUN_FILES} == {"first_run"}
    assert work_unit("tests/unit/test_cli.py::test_one[a::b]") == work_unit("tests/unit/test_cli.py::test_two")
    units = {work_unit(f"tests/{path}::test_one") for path in ("unit/test_cli.py", "integration/test_resume.py")}
    assert len(units) == 2 and "first_run" not in units
