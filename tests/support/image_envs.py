"""Fresh Python environments with exactly what ZenML's image builder would install in each image of a compiled run.

`images()` asks ZenML's own `PipelineDockerImageBuilder.gather_requirements_files` for the requirement files of each
distinct image (one per distinct Docker settings among the steps), with the stack's integration requirements.
`ImageEnvs.python_for()` builds a virtual environment from those files with `uv`, in place of the image:

- the parent image's ZenML is `zenml[local]` at this ZenML's version: an image talks to a ZenML server, a test to the
  session's SQLite store, whose client is the `local` extra (a test necessity, not an image's);
- vLLM's CUDA wheel cannot be installed here: where an image has it, the whole set is resolved with it for Linux
  x86_64 (so a conflict with it fails) and every other package is installed at the version resolved beside it;
- each distinct set is built once and kept, keyed by its hash, under `LLM_EVAL_IMAGE_ENVS` (default
  ~/.cache/llm-engineering/image-envs) for a week, then resolved again; uv's own cache makes a rebuild take seconds.
  uv reaches PyPI only: nothing here may pull torch, which would be a CUDA build of several GB (tests check it).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CUDA_ONLY = {"vllm"}  # distributions an image installs that cannot be installed on this machine
IMAGE_PLATFORM = "x86_64-manylinux_2_28"  # ZenML's parent images: Linux, x86_64
KEEP_SECONDS = 7 * 24 * 3600
BUILD_TIMEOUT = 900


def _distribution(requirement: str) -> str:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    return canonicalize_name(Requirement(requirement).name)


@dataclass(frozen=True)
class Image:
    """One image of a compiled run: the steps that run in it and the requirement files ZenML would install there."""

    steps: tuple[str, ...]
    files: tuple[tuple[str, str], ...]  # (file name, content), in ZenML's install order

    @property
    def requirements(self) -> list[str]:
        """Every requirement line of the files, comments and blank lines left out."""
        lines = (line.split("#", 1)[0].strip() for _, content in self.files for line in content.splitlines())
        return [line for line in lines if line]


def images(snapshot: Any, stack: Any) -> list[Image]:
    """The distinct images of `snapshot`'s steps on `stack`, each with the requirement files ZenML's image builder
    gathers for it."""
    from zenml.utils.pipeline_docker_image_builder import PipelineDockerImageBuilder

    by_settings: dict[str, list[str]] = {}
    settings = {}
    for name, step in snapshot.step_configurations.items():
        docker = step.config.docker_settings
        key = docker.model_dump_json()
        by_settings.setdefault(key, []).append(name)
        settings[key] = docker
    return [Image(steps=tuple(sorted(names)), files=tuple(
                (file, content) for file, content, _ in
                PipelineDockerImageBuilder.gather_requirements_files(settings[key], stack, log=False)))
            for key, names in by_settings.items()]


def _run(command: list[str], **kwargs: Any) -> str:
    result = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT, **kwargs)
    if result.returncode:
        raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return result.stdout


class ImageEnvs:
    """Builds (once) and finds the environment of a set of image requirements."""

    def __init__(self, root: Path | None = None):
        import zenml

        self.root = Path(root or os.environ.get("LLM_EVAL_IMAGE_ENVS") or
                         Path.home() / ".cache" / "llm-engineering" / "image-envs")
        self.base = f"zenml[local]=={zenml.__version__}"
        self.python_version = f"{sys.version_info.major}.{sys.version_info.minor}"
        self.uv = str(Path(sys.executable).with_name("uv"))
        # The session sets XDG_CACHE_HOME to its own folder: uv's cache is the machine's, or every session downloads.
        self.uv_env = {**os.environ, "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR") or
                       str(Path.home() / ".cache" / "uv")}

    def key(self, requirements: list[str]) -> str:
        text = "\n".join([self.python_version, IMAGE_PLATFORM, self.base, *requirements])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def python_for(self, requirements: list[str]) -> Path:
        """The python of an environment with `requirements` (an image's, CUDA-only packages aside) and ZenML."""
        key = self.key(requirements)
        env = self.root / key
        marker = env / "built"
        if marker.is_file() and time.time() - marker.stat().st_mtime < KEEP_SECONDS:
            return env / "bin" / "python"
        self.root.mkdir(parents=True, exist_ok=True)
        self._prune()
        work = Path(tempfile.mkdtemp(prefix=f".build-{key}-", dir=self.root))
        try:
            self._build(requirements, work)
            if env.exists():  # a week old, or half built: out of the way first (a rename is atomic)
                stale = Path(tempfile.mkdtemp(prefix=f".stale-{key}-", dir=self.root))
                os.rename(env, stale / "env")
                shutil.rmtree(stale, ignore_errors=True)
            try:
                os.rename(work, env)
            except OSError:  # another session built it meanwhile: use theirs
                pass
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return env / "bin" / "python"

    def _prune(self) -> None:
        """Environments built over a week ago (for a pyproject.toml since changed, say), and builds that a killed
        session left (a day old)."""
        now = time.time()
        for entry in self.root.iterdir():
            marker = entry / "built"
            try:
                built = marker.is_file()
                age = now - (marker if built else entry).stat().st_mtime
            except FileNotFoundError:  # removed by another session meanwhile
                continue
            if age > (KEEP_SECONDS if built else 24 * 3600):
                shutil.rmtree(entry, ignore_errors=True)

    def _build(self, requirements: list[str], work: Path) -> None:
        installable = [r for r in requirements if _distribution(r) not in CUDA_ONLY]
        (work / "requirements.txt").write_text("\n".join([self.base, *installable]) + "\n")
        install = ["-r", str(work / "requirements.txt")]
        if len(installable) < len(requirements):  # every version as resolved beside the CUDA-only packages
            (work / "image.txt").write_text("\n".join([self.base, *requirements]) + "\n")
            _run([self.uv, "pip", "compile", "-q", str(work / "image.txt"), "--python-version", self.python_version,
                  "--python-platform", IMAGE_PLATFORM, "-o", str(work / "image.lock")], env=self.uv_env)
            install += ["-c", str(work / "image.lock")]
        venv = work / "venv"
        _run([self.uv, "venv", "-q", "--relocatable", "--python", sys.executable, str(venv)], env=self.uv_env)
        _run([self.uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), *install], env=self.uv_env)
        for name in os.listdir(venv):  # the environment is the folder itself; the build's files stay beside it
            os.rename(venv / name, work / name)
        venv.rmdir()
        (work / "built").touch()


def extract_code(source_root: Path, target: Path) -> Path:
    """What an image gets of the project: ZenML's code archive of `source_root` (the files git does not ignore),
    extracted into `target`, plus the `.zen` folder that marks the source root there (`/app` in an image)."""
    from zenml.utils.code_utils import CodeArchive

    archive = target.with_suffix(".tar.gz")
    with open(archive, "wb") as file:
        CodeArchive(root=str(source_root)).write_archive(file)
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    archive.unlink()
    (target / ".zen").mkdir(exist_ok=True)
    return target


def app_folder(code: Path, target: Path) -> Path:
    """A folder of its own for one process over the code extracted in `code`: its entries linked, and a `.zen` of its
    own (ZenML writes its repository config there, as into ZENML_CONFIG_PATH: processes that share either race)."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in code.iterdir():
        if entry.name != ".zen" and not (target / entry.name).exists():
            (target / entry.name).symlink_to(entry)
    (target / ".zen").mkdir(exist_ok=True)
    return target


def container_environment(home: Path, **environment: str) -> dict[str, str]:
    """A process environment as a container has it: no variable of this process's but the PATH, a home and ZenML
    configuration of its own, then `environment` (what ZenML hands a step, for instance)."""
    home.mkdir(parents=True, exist_ok=True)
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
            "ZENML_CONFIG_PATH": str(home / ".zenconfig"), "ZENML_ANALYTICS_OPT_IN": "false", **environment}


# What every image must do first: import the project's steps and pipeline (ZenML loads a step by importing it).
IMPORT_CHECK = """
import importlib.util, json, sys
import steps, steps.evaluating, pipelines.evaluating
print(json.dumps({"prefix": sys.prefix, "torch_installed": importlib.util.find_spec("torch") is not None,
                  "torch_imported": "torch" in sys.modules}))
"""


def import_check(python: Path, code: Path, environment: dict[str, str]) -> subprocess.Popen:
    """Start `import steps, pipelines.evaluating` with `python` in the code folder `code` (the image's /app)."""
    return subprocess.Popen([str(python), "-c", IMPORT_CHECK], cwd=code, env=environment, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
