"""Per-answer checkpoint: every finished answer is appended to a JSONL file as vLLM returns it.

One file per generation configuration (model, its weights, sampling, dtype, max_model_len);
inside it each answer is keyed by its row id, the exact prompt text and its sample number, so a changed dataset
row or prompt template is generated again while every unchanged row is reused. A process
killed mid-write leaves at most one torn last line, which is ignored and regenerated (as is any
damaged line). Two runs with the same configuration take turns: the second waits for the first,
then reuses its answers.
"""

from __future__ import annotations

import hashlib
import json
import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional

from filelock import FileLock, Timeout
from pydantic import BaseModel

from llm_engineering.evaluation.disk import naming_a_full_disk
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.generation.config import SamplingConfig
from llm_engineering.evaluation.models import file_label

logger = logging.getLogger(__name__)


class AnswerRecord(BaseModel):
    """One generated answer, as stored in the checkpoint and in the `generations` artifact."""

    answer: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def model_fingerprint(model_path: str) -> dict[str, Any]:
    """What identifies the weights: a Hub id as given, a local folder by its files' sizes and times.

    Fine-tuning into the same output folder must not resume from the previous model's answers.
    """
    folder = Path(model_path)
    if not folder.is_dir():
        return {"model": model_path}
    files = sorted(p for p in folder.iterdir() if p.is_file())
    return {"model": str(folder.resolve()),
            "files": [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files]}


def row_key(row_id: str, prompt: str, sample: int = 0) -> str:
    """An answer's key: its row id, the exact prompt, and which of the prompt's samples it is (the first keeps the
    key it had before there were samples)."""
    return _digest([row_id, prompt] + ([sample] if sample else []))[:32]


class AnswerCheckpoint:
    """Append-only store of finished answers for one generation configuration."""

    def __init__(self, directory: Path, model_id: str, model_path: str, *,
                 sampling: SamplingConfig, engine: EngineConfig, adapter: Optional[str] = None) -> None:
        config = {
            **model_fingerprint(model_path),
            # A LoRA adapter's weights, as the base's: retrained into the same folder, it answers anew.
            **({"adapter": model_fingerprint(adapter)} if adapter else {}),
            # Not `n`: the s-th answer is the same whatever n is (seed + s), so raising n keeps those generated.
            "sampling": sampling.model_dump(exclude={"n"}),
            # Only what changes the tokens; scheduling knobs (max_num_seqs...) do not.
            "dtype": engine.dtype,
            "max_model_len": engine.max_model_len,
        }
        name = "".join(c if c.isalnum() or c in "-_.+" else "_" for c in file_label(model_id))
        self.path = Path(directory).expanduser() / f"{name}-{_digest(config)[:16]}.jsonl"

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold this checkpoint for one run's generation. Another run with the same configuration waits here
        (and says so), then finds the first run's answers saved. The lock ends with its process, even a killed one."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(f"{self.path}.lock")
        try:
            lock.acquire(timeout=0)
        except Timeout:
            logger.warning("Another run is generating into %s (same model, sampling and engine settings): waiting "
                           "for it to end, then reusing its answers.", self.path)
            lock.acquire()
        try:
            yield
        finally:
            lock.release()

    def load(self) -> dict[str, AnswerRecord]:
        """Every complete answer on disk, by row key (a torn or damaged line is skipped and counted)."""
        if not self.path.is_file():
            return {}
        records: dict[str, AnswerRecord] = {}
        torn = 0
        with self.path.open(encoding="utf-8") as handle:
            for line in handle:
                try:
                    data = json.loads(line)
                    records[data.pop("key")] = AnswerRecord.model_validate(data)
                except (ValueError, KeyError, TypeError):
                    torn += 1
        if torn:
            logger.warning("Skipped %d incomplete or damaged line(s) of %s; those rows are generated again.", torn, self.path)
        return records

    def reset(self) -> None:
        self.path.unlink(missing_ok=True)

    def writer(self) -> "CheckpointWriter":
        return CheckpointWriter(self.path)


class CheckpointWriter:
    """Appends records, each line handed to the OS at once (unbuffered), so a killed process keeps every finished
    answer, and a full disk fails the line being written, never a later close."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._handle = path.open("a+b", buffering=0)
        if self._handle.seek(0, 2):
            self._handle.seek(-1, 2)
            if self._handle.read(1) != b"\n":  # a torn line from a killed run: end it
                self._write(b"\n")

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:  # an unbuffered write may take part of the line
            view = view[self._handle.write(view):]

    def append(self, key: str, row_id: str, record: AnswerRecord, sample: int = 0) -> None:
        line = json.dumps({"key": key, "id": row_id, "sample": sample, **record.model_dump()}, ensure_ascii=False) + "\n"
        with naming_a_full_disk(str(self.path.parent), "save an answer to the checkpoint",
                                "(or set CHECKPOINT_DIR to another disk) and run the same command again; every "
                                "answer saved before is kept."):
            self._write(line.encode("utf-8"))

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> "CheckpointWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
