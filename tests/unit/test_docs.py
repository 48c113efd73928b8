"""The docs against the code: every command they show parses against the real command line, every `make` target
they name exists, every relative link lands on a file and heading, docs/command-line.md lists every flag, and
docs/architecture.md names every module of the library and every docs page. Nothing is run: each command line is
parsed by its click command (types, choices and callbacks included), in a few seconds."""

from __future__ import annotations

import importlib
import re
import shlex
from pathlib import Path
from typing import Iterator, Optional

import click
import pytest

from tools.aliases import legacy_to_command
from tools.run import main

REPO = Path(__file__).resolve().parents[2]
PAGES = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md", REPO / "benchmarks" / "README.md"]
_PYTHON = r"(?:\.venv/bin/)?python3?"
_RUN = re.compile(rf"^{_PYTHON}\s+tools/run\.py(?:\s|$)")
_BENCHMARK = re.compile(rf"^{_PYTHON}\s+-m\s+(benchmarks\.\w+\.\w+)(?:\s|$)")
_MAKE = re.compile(r"^make\s+\S")
_SHELL_OPERATORS = {"&&", "||", ";", "|"}
# A value written as a name for what goes there (`--limit N`, `REPORT.json`, `<run>`).
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(\.\w+)?$|<[^>]*>")


def _relative(page: Path) -> str:
    return str(page.relative_to(REPO))


def _code(page: Path) -> Iterator[tuple[int, str]]:
    """Each piece of code on a page, with its line: every line of a fenced block (backslash continuations joined, a
    shell prompt `$ ` dropped) and every inline code span (line breaks inside it read as spaces)."""
    lines = page.read_text().splitlines()
    fenced, prose = False, []
    pending: Optional[tuple[int, str]] = None
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            prose.append("")
            continue
        if not fenced:
            prose.append(line)
            continue
        prose.append("")
        text = line.strip().removeprefix("$ ")
        start, text = (pending[0], f"{pending[1]} {text}") if pending else (number, text)
        if text.endswith("\\"):
            pending = (start, text[:-1].strip())
            continue
        pending = None
        yield start, text
    text = "\n".join(prose)
    for match in re.finditer(r"`([^`]+)`", text):
        yield text.count("\n", 0, match.start()) + 1, " ".join(match.group(1).split())


def _commands(tokens: list[str]) -> Iterator[list[str]]:
    """The simple commands of a shell line's tokens (split at `&&`, `;`, pipes; redirections dropped)."""
    command: list[str] = []
    skip = False
    for token in tokens:
        if skip:
            skip = False
        elif token in _SHELL_OPERATORS:
            yield command
            command = []
        elif token in (">", ">>", "<", "2>"):
            skip = True
        elif not re.fullmatch(r"\d?>&\d", token):
            command.append(token)
    yield command


def _normalised(tokens: list[str]) -> list[str]:
    """The docs' notation read as a command line: `[--limit N]` an option given, `1|2` its first choice, `...` and
    `…` (more of the same) left out."""
    out = []
    for token in tokens:
        token = token.strip("[]")
        if token in ("", "...", "…"):
            continue
        if re.fullmatch(r"[\w.-]+(\|[\w.-]+)+", token):
            token = token.split("|")[0]
        out.append(token)
    return out


def documented_commands() -> Iterator[tuple[str, str]]:
    """(where, command line) for every `python tools/run.py ...`, `python -m benchmarks....` and `make ...` in the
    docs and READMEs."""
    for page in PAGES:
        for line, text in _code(page):
            for part in re.split(r"\s*&&\s*", text):
                if _RUN.match(part) or _BENCHMARK.match(part) or _MAKE.match(part):
                    yield f"{_relative(page)}:{line}", part


def _sample_value(param: click.Parameter, value: str) -> str:
    """A value of the parameter's type where the docs name a placeholder (`--limit N`), else the value itself; a path
    that must exist, one that does (the docs' files lie on the machine of whoever runs the command)."""
    kind = param.type
    if isinstance(kind, click.Path) and kind.exists:
        return str(REPO if kind.dir_okay and not kind.file_okay else Path(__file__))
    if not _PLACEHOLDER.search(value):
        return value
    if isinstance(kind, click.Choice):
        return str(kind.choices[0])
    if isinstance(kind, click.FloatRange):  # inside the range, off its (possibly open) ends
        low, high = kind.min if kind.min is not None else 0.0, kind.max if kind.max is not None else 2.0
        return str((low + high) / 2)
    if isinstance(kind, click.IntRange):
        return str(kind.min + int(kind.min_open) if kind.min is not None else kind.max if kind.max is not None else 1)
    if isinstance(kind, (click.types.IntParamType, click.types.FloatParamType)):
        return "1"
    return value


def _with_samples(command: click.Command, args: list[str]) -> list[str]:
    """`args` with each placeholder value of a typed option replaced by a value of its type."""
    options = {opt: param for param in command.params if isinstance(param, click.Option) for opt in param.opts}
    arguments = [param for param in command.params if isinstance(param, click.Argument)]
    out, expects = [], None
    for arg in args:
        if expects is not None:
            out.append(_sample_value(expects, arg))
            expects = None
            continue
        name = arg.split("=", 1)[0]
        param = options.get(name)
        if param is not None and not param.is_flag and "=" not in arg:
            expects = param
        elif param is None and not arg.startswith("-") and arguments:
            arg = _sample_value(arguments[0], arg)
        out.append(arg)
    return out


def _parse(command: click.Command, name: str, args: list[str]) -> None:
    try:
        command.make_context(name, _with_samples(command, args))
    except click.exceptions.Exit as ended:  # --help
        if ended.exit_code:
            raise


def _makefile_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z][\w.-]*):(?!=)", (REPO / "Makefile").read_text(), flags=re.M))


def check_command(text: str, targets: set[str]) -> Optional[str]:
    """Why a documented command line would not run as written (None when it parses)."""
    try:  # `<a run's results>`: one placeholder, whatever it holds
        tokens = shlex.split(re.sub(r"<[^<>]+>", "<placeholder>", text), comments=True)
    except ValueError as error:
        return f"not a shell line ({error})"
    first = next(_commands(tokens))
    args = _normalised(first)
    try:
        if args and args[0] == "make":
            missing = [target for target in args[1:] if not target.startswith("-") and "=" not in target
                       and target not in targets]
            return f"no Makefile target {', '.join(missing)}" if missing else None
        found = _BENCHMARK.match(" ".join(args))
        if found:
            module = importlib.import_module(found.group(1))  # as `python -m` does: benchmarks stay leaves
            _parse(module.main, found.group(1), args[3:])
            return None
        rest = args[2:]
        if not rest:
            return None  # `python tools/run.py ...`: the script named, no command line
        if _PLACEHOLDER.search(rest[0]):  # `python tools/run.py COMMAND --help`: any command
            for command in main.commands.values():
                _parse(command, command.name or "", rest[1:])
            return None
        argv, _ = legacy_to_command(rest)
        name = argv[0]
        if name.startswith("-"):  # `python tools/run.py --help`
            _parse(main, "run.py", argv)
            return None
        if name not in main.commands:
            return f"no command {name!r} (commands: {', '.join(main.commands)})"
        _parse(main.commands[name], name, argv[1:])
    except click.ClickException as error:
        return error.format_message()
    except ModuleNotFoundError as error:
        return str(error)
    return None


def test_every_command_in_the_docs_parses_against_the_real_command_line():
    """Each `python tools/run.py ...` (with the earlier `--run-evaluation` aliases), `python -m benchmarks....` and
    `make ...` line of the docs and READMEs names a real command, target or benchmark, and its flags and values parse
    with that command's own parser; a placeholder (`--limit N`) stands for a value of the option's type."""
    targets = _makefile_targets()
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
    why = check_command(text, _makefile_targets())
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
    assert check_command(text, _makefile_targets()) is None


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    fenced = False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"^#{1,6}\s+(.*)$", line)):
            slug = _slug(heading.group(1))
            anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
    return anchors


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
            where = f"{_relative(page)}:{text.count(chr(10), 0, match.start()) + 1}: {link}"
            if not target.exists():
                broken.append(f"{where}: no such file")
            elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
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


def architecture_listing(page: str) -> tuple[set[str], set[str]]:
    """The rooms (folders) and modules architecture.md's table of modules lists, as paths from the repository root: a
    row's first cell names its folder under `llm_engineering/` in backticks, its second the modules in it."""
    rooms, modules = set(), set()
    for first, second in re.findall(r"^\|([^|\n]*)\|([^|\n]*)\|[^\n]*\|\s*$", page, flags=re.M):
        folder = re.search(r"`([\w/]+/)`", first)
        if folder is None:
            continue
        room = "llm_engineering/" + ("" if folder.group(1) == "llm_engineering/" else folder.group(1))
        rooms.add(room)
        modules |= {room + name for name in re.findall(r"`([\w]+\.py)`", second)}
    return rooms, modules


def library_modules() -> tuple[set[str], set[str]]:
    """The library's packages (rooms) and modules on disk, as paths from the repository root."""
    files = [path.relative_to(REPO).as_posix() for path in (REPO / "llm_engineering").rglob("*.py")]
    rooms = {name.rsplit("/", 1)[0] + "/" for name in files if name.endswith("/__init__.py")}
    return rooms, {name for name in files if not name.endswith("__init__.py")}


def _room(module: str) -> str:
    """A module's folder as the table's first column names it (`evaluation/trust/`, `llm_engineering/`)."""
    folder = module.removeprefix("llm_engineering/").rpartition("/")[0]
    return f"{folder}/" if folder else "llm_engineering/"


def architecture_gaps(page: str) -> list[str]:
    """What architecture.md leaves out of the library and the docs, or lists that is gone."""
    listed_rooms, listed = architecture_listing(page)
    rooms, modules = library_modules()
    docs = sorted(path.name for path in (REPO / "docs").glob("*.md"))
    return ([f"room {room} is not in architecture.md's table of modules: add a row for it" for room in
             sorted(rooms - listed_rooms)]
            + [f"{module} is not in architecture.md's table of modules: add it to a row of its room, `{_room(module)}`"
               for module in sorted(modules - listed)]
            + [f"{module} is listed in architecture.md but does not exist: rename or drop it there"
               for module in sorted(listed - modules)]
            + [f"docs/{name} is not listed in architecture.md's table of docs: add a line for it" for name in docs
               if f"]({name})" not in page])


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
