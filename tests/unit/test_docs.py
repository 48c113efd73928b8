"""The docs against the code: every command they show parses against the real command line, every `make` target
they name exists, every relative link lands on a file and heading, docs/command-line.md lists every flag, and
docs/architecture.md names every module of the library and every docs page. Nothing is run: each command line is
parsed by its click command (types, choices and callbacks included), in a few seconds."""

from __future__ import annotations

import re

import click
import pytest

from tests.support.docs_check import (
    PAGES,
    REPO,
    anchors,
    architecture_gaps,
    check_command,
    documented_commands,
    makefile_targets,
    relative,
)
from tools.run import main


def test_every_command_in_the_docs_parses_against_the_real_command_line():
    """Each `python tools/run.py ...` (with the earlier `--run-evaluation` aliases), `python -m benchmarks....` and
    `make ...` line of the docs and READMEs names a real command, target or benchmark, and its flags and values parse
    with that command's own parser; a placeholder (`--limit N`) stands for a value of the option's type."""
    targets = makefile_targets()
    found = list(documented_commands())
    broken = [f"{where}: `{text}`: {why}" for where, text in found if (why := check_command(text, targets))]
    assert len(found) > 100, f"only {len(found)} commands found in the docs: is the extraction broken?"
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("text, problem", [
    ("python tools/run.py evaluate --no-such-flag", "No such option '--no-such-flag'"),
    ("python tools/run.py judge-bench --labels x.jsonl", "No such option '--labels'"),
    (".venv/bin/python tools/run.py evaluate --limit 0", "0 is not in the range x>=1"),
    ("python tools/run.py evaluate --prompt-template llama", "'llama' is not one of"),
    ("python tools/run.py judge-bench --limit 3", "Missing option '--pairs'"),
    ("python tools/run.py evaluat --limit 3", "Nothing to do"),
    ("python tools/run.py --run-evaluation --only-failed", "--only-failed and --from-hub go with --rescore"),
    ("python tools/run.py evaluate --column ROLE", "ROLE"),
    ("make evaluat", "no Makefile target evaluat"),
    ("python -m benchmarks.judge_studies.samples --no-such-flag", "No such option '--no-such-flag'"),
    ("python -m benchmarks.judge_studies.rubric_choice --answers RESULTS", "Missing option '--rubric'"),
    ("python -m benchmarks.judge_studies.no_such_study", "No module named 'benchmarks.judge_studies.no_such_study'"),
    ("python tools/run.py judge-bench --pairs p.jsonl --half 3", "3 is not in the range 1<=x<=2"),
    ("python tools/run.py evaluate --model 'unclosed", "not a shell line"),
])
def test_a_broken_command_is_caught_with_why(text, problem):
    why = check_command(text, makefile_targets())
    assert why is not None and problem in why, why


@pytest.mark.parametrize("text", [
    "python tools/run.py judge-bench --pairs FILE [--limit N] [--half 1|2] [--config FILE] [--judge MODEL] [--rubric R]",
    "python tools/run.py --run-evaluation --config configs/pairwise-temperature.yaml --limit 20",
    ".venv/bin/python -m benchmarks.performance.generation --engine vllm --prompts 64 --max-tokens 128 "
    "--engine-config '{\"cpu_preload\": false|true}'",
    "make install judges",
    "python tools/run.py evaluate --samples K  # K answers a prompt",
])
def test_the_docs_notation_parses(text):
    """Optional groups, alternatives, placeholders and comments, as the docs write them, read as a command line."""
    assert check_command(text, makefile_targets()) is None


def test_every_relative_link_in_the_docs_lands_on_a_file_and_heading():
    """A page moved, merged or renamed, or a heading reworded, leaves no link pointing nowhere."""
    broken = []
    for page in PAGES:
        text = page.read_text()
        for match in re.finditer(r"\]\(([^)\s]+)\)", text):
            link = match.group(1)
            if re.match(r"^[a-z]+:", link):
                continue
            path, _, anchor = link.partition("#")
            target = (page.parent / path).resolve() if path else page
            where = f"{relative(page)}:{text.count(chr(10), 0, match.start()) + 1}: {link}"
            if not target.exists():
                broken.append(f"{where}: no such file")
            elif anchor and target.suffix == ".md" and anchor not in anchors(target):
                broken.append(f"{where}: no heading with that anchor in {target.name}")
    assert not broken, "\n".join(broken)


def test_docs_command_line_lists_every_flag_of_every_command_in_its_section():
    """docs/command-line.md has a section per command (`### evaluate`...) naming each of its flags: a flag added to the
    CLI and not to the page fails here."""
    page = (REPO / "docs" / "command-line.md").read_text()
    sections = dict(re.findall(r"^### `?([a-z-]+)`?\n(.*?)(?=^### |^## |\Z)", page, flags=re.S | re.M))
    missing = []
    for name, command in main.commands.items():
        flags = [flag for param in command.params if isinstance(param, click.Option) for flag in param.opts
                 if flag.startswith("--")]
        text = sections.get(name)
        if text is None:
            missing.append(f"### {name}: no section")
            continue
        missing += [f"{name} {flag}" for flag in flags if f"`{flag}" not in text]
    legacy = sections.get("--run-evaluation", "") + page
    missing += [f"alias {flag}" for flag in ("--run-evaluation", "--rescore", "--publish-only", "--export-settings",
                                             "--create-snapshot") if f"`{flag}" not in legacy]
    assert not missing, missing


def test_architecture_lists_every_room_module_and_docs_page():
    """A module added to the library (or moved, or removed), or a docs page added, without architecture.md saying so
    fails here, naming it."""
    gaps = architecture_gaps((REPO / "docs" / "architecture.md").read_text())
    assert not gaps, "\n".join(gaps)


def test_a_module_missing_from_architecture_is_named():
    """The check itself: a module's entry dropped from the page is reported by its path."""
    page = (REPO / "docs" / "architecture.md").read_text()
    without = page.replace("`paired.py`, ", "", 1)
    assert without != page
    assert architecture_gaps(without) == [
        "llm_engineering/evaluation/trust/paired.py is not in architecture.md's table of modules: add it to a row of "
        "its room, `evaluation/trust/`"]


def test_a_module_listed_in_architecture_but_gone_is_named():
    """A module renamed or removed in the code, and still listed, is reported too: the table says what exists."""
    page = (REPO / "docs" / "architecture.md").read_text()
    listed = page.replace("`paired.py`, ", "`paired.py`, `ghost.py`, ", 1)
    assert architecture_gaps(listed) == [
        "llm_engineering/evaluation/trust/ghost.py is listed in architecture.md but does not exist: rename or drop it "
        "there"]
