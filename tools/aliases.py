"""`--run-evaluation`, the original's entry point, and the earlier single command's other flags, read as aliases
of the commands that do their work."""

from __future__ import annotations

import click

NOTHING_TO_DO = ("Nothing to do: name a command (evaluate, rescore, publish, export-settings, snapshot, judge-bench; "
                 "see --help), or pass --run-evaluation.")
COMMANDS = ("evaluate", "rescore", "publish", "export-settings", "snapshot", "judge-bench")
_LEGACY_FLAGS = ("--run-evaluation", "--rescore", "--publish-only", "--export-settings")


def legacy_to_command(args: list[str]) -> tuple[list[str], bool]:
    """The earlier single command's flags as a command line of the commands (`--run-evaluation` is `evaluate`,
    `--rescore` `rescore`, `--publish-only` `publish`, `--create-snapshot NAME` `snapshot NAME`), and whether
    `--export-settings` asked for the settings to be exported first. Other command lines are returned as given."""
    if not args or args[0] in COMMANDS or args[0] in ("--help", "-h"):
        return args, False
    command_at = next((i for i, arg in enumerate(args) if arg in COMMANDS), None)
    if command_at is not None:
        raise click.UsageError(f"{args[0]}: options go after the command, e.g. "
                               f"`python tools/run.py {args[command_at]} --help`.")
    found, rest, snapshot = set(), [], None
    arguments = iter(args)
    for arg in arguments:
        if arg in _LEGACY_FLAGS:
            found.add(arg)
        elif arg == "--create-snapshot":
            snapshot = next(arguments, None)
            if snapshot is None:
                raise click.UsageError("--create-snapshot needs the snapshot's NAME.")
        else:
            rest.append(arg)
    export = "--export-settings" in found
    if snapshot is not None and found & {"--rescore", "--publish-only"}:
        raise click.UsageError("--create-snapshot stores the evaluation pipeline: not with --rescore or --publish-only.")
    if snapshot is None and not found - {"--export-settings"}:
        if export and not rest:
            return ["export-settings"], False
        raise click.UsageError(NOTHING_TO_DO)
    if {"--only-failed", "--from-hub"} & set(rest) and "--rescore" not in found:
        raise click.UsageError("--only-failed and --from-hub go with --rescore.")
    command = (["snapshot", snapshot] if snapshot is not None else ["publish"] if "--publish-only" in found
               else ["rescore"] if "--rescore" in found else ["evaluate"])
    return command + rest, export


class Commands(click.Group):
    """The commands, and the earlier single command's flags (`--run-evaluation` & co.) read as their aliases."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        args, export_first = legacy_to_command(list(args))
        ctx.meta["export_settings_first"] = export_first
        return super().parse_args(ctx, args)
