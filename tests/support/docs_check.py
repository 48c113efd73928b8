"""Reading the docs as the code reads them: the commands they show (`python tools/run.py ...`, `python -m
benchmarks....`, `make ...`) parsed by the real command line without running anything, the headings links point at,
and the modules and pages architecture.md lists (tests/unit/test_docs.py)."""

from __future__ import annotations

import importlib
import re
import shlex
from pathlib import Path
from typing import Iterator, Optional

import click

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


def relative(page: Path) -> str:
    return str(page.relative_to(REPO))


def code_spans(page: Path) -> Iterator[tuple[int, str]]:
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
        for line, text in code_spans(page):
            for part in re.split(r"\s*&&\s*", text):
                if _RUN.match(part) or _BENCHMARK.match(part) or _MAKE.match(part):
                    yield f"{relative(page)}:{line}", part


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
            arg = _sample_value(arguments.pop(0), arg)
        out.append(arg)
    return out


def _parse(command: click.Command, name: str, args: list[str]) -> None:
    try:
        command.make_context(name, _with_samples(command, args))
    except click.exceptions.Exit as ended:  # --help
        if ended.exit_code:
            raise


def makefile_targets() -> set[str]:
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


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings (a repeated heading's with `-1`, `-2`...), code blocks left out."""
    seen: dict[str, int] = {}
    found = set()
    fenced = False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"^#{1,6}\s+(.*)$", line)):
            name = slug(heading.group(1))
            found.add(f"{name}-{seen[name]}" if name in seen else name)
            seen[name] = seen.get(name, 0) + 1
    return found


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
