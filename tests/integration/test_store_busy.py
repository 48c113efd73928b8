"""The ZenML store busy: another process (as a dashboard server writing to the same SQLite store) holds its
write lock when a run starts. The run waits for it and completes, instead of failing with `database is locked`."""

import subprocess
import sys
import textwrap

import pytest

from tests.support.cli_output import reported_run
from tests.support.configs import stub_judged
from tests.support.openai_stub import OpenAIStub

HELD_S = 8  # longer than SQLite's default wait (5 s), after which a write fails with `database is locked`

_HOLD_THE_LOCK = textwrap.dedent("""
    import sqlite3, sys, time
    store = sqlite3.connect(sys.argv[1], isolation_level=None)
    store.execute("BEGIN EXCLUSIVE")  # no other connection may read or write until the commit
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    store.execute("COMMIT")
    print("released", flush=True)
""")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_run_started_while_another_process_holds_the_store_waits_and_completes(run_cli, tmp_path):
    from zenml.client import Client

    url = Client().zen_store.config.url  # (the store is created on first use)
    assert url.startswith("sqlite:///"), url
    config = tmp_path / "run.yaml"
    with OpenAIStub() as judge:
        stub_judged(config, judge.base_url, rows=2, max_tokens=8)
        holder = subprocess.Popen([sys.executable, "-c", _HOLD_THE_LOCK, url.removeprefix("sqlite:///"), str(HELD_S)],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "locked"
            result = run_cli("evaluate", "--config", config)
            assert holder.stdout.readline().strip() == "released"  # the lock was held until its end, not broken
        finally:
            holder.kill()
            holder.wait()
    _, report = reported_run(result)
    assert "database is locked" not in result.output
    assert (report["models"][0]["rows"], report["models"][0]["scored"]) == (2, 2), report["models"]
