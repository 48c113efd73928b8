"""The requirements of the images ZenML builds for remote steps, printed from pyproject.toml: one source.

ZenML runs this while it builds an image (`DockerSettings.pyproject_export_command` in
configs/evaluating_remote.yaml, `{directory}` being pyproject.toml's folder) and installs what it prints:

    python3 tools/image_requirements.py pyproject.toml --without zenml --without accelerate            # orchestrator
    python3 tools/image_requirements.py pyproject.toml --extra gpu --without zenml --without accelerate  # generation

Printed: `[project].dependencies` plus each `--extra`'s list, less the distributions named by `--without`, as
pyproject.toml writes them (the same pins). Only the standard library, so any Python 3.11+ on the PATH runs it
(3.10 with `tomli`), whichever environment started the build.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    try:
        import tomli as tomllib  # type: ignore[no-redef]
    except ModuleNotFoundError:
        sys.exit(f"image_requirements: {sys.executable} ({sys.version.split()[0]}) reads no TOML: put a Python 3.11+ "
                 f"first on the PATH as python3, or `pip install tomli` for it")


def distribution(requirement: str) -> str:
    """The normalized distribution name of a requirement (`zenml[local]==0.98.0` -> `zenml`), as PEP 503 compares."""
    name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if name is None:
        raise ValueError(f"not a requirement: {requirement!r}")
    return re.sub(r"[-_.]+", "-", name.group(1)).lower()


def image_requirements(pyproject: Path, extras: list[str], without: list[str]) -> list[str]:
    """pyproject's dependencies plus `extras`' lists, less the distributions in `without`; errors name the fix."""
    project = tomllib.loads(pyproject.read_text())["project"]
    optional = project.get("optional-dependencies", {})
    unknown = sorted(set(extras) - set(optional))
    if unknown:
        raise ValueError(f"{pyproject} has no extra(s) {unknown}; its extras: {sorted(optional)}")
    requirements = [*project["dependencies"], *(r for extra in extras for r in optional[extra])]
    names = {distribution(r) for r in requirements}
    absent = sorted({distribution(w) for w in without} - names)
    if absent:
        raise ValueError(f"--without {absent}: not a dependency of {pyproject} (nor of the extras {extras}); "
                         f"remove the option or fix its spelling")
    left_out = {distribution(w) for w in without}
    return [r for r in requirements if distribution(r) not in left_out]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pyproject", type=Path, help="the project's pyproject.toml")
    parser.add_argument("--extra", action="append", default=[], help="an optional-dependencies list to add")
    parser.add_argument("--without", action="append", default=[], help="a distribution the image must not install")
    args = parser.parse_args(argv)
    try:
        lines = image_requirements(args.pyproject, args.extra, args.without)
    except (OSError, KeyError, ValueError, tomllib.TOMLDecodeError) as error:
        print(f"image_requirements: {error}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
