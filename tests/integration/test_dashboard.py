"""The local ZenML dashboard: `zenml login --local` (what `make dashboard` runs), the session's first small evaluation
(`first_run`, which the pipeline tests read too), its run page in Debian's Chromium driven headless by Playwright, and
its HTML summary served.

The server serves the session's private SQLite store, where that run lies (made before the server starts, or while it
runs: this process keeps writing to that store directly).
"""

import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from llm_engineering.evaluation import columns as col
from llm_engineering.infrastructure.zenml_runs import step_output
from tests.support.browser import CHROMIUM, chromium
from tools.dashboard import skip_onboarding

pytestmark = pytest.mark.slow



def _zenml(*args, timeout):
    env = {**os.environ, "ZENML_AUTO_OPEN_DASHBOARD": "false"}
    return subprocess.run([str(Path(sys.executable).parent / "zenml"), *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def run_page_url(server_url, run_id, project="default"):
    """The dashboard page of one pipeline run."""
    return f"{server_url.rstrip('/')}/projects/{project}/runs/{run_id}"


def visualization_url(server_url, artifact_version_id, index=0):
    """The server endpoint that serves an artifact's visualization (the HTML summary report)."""
    return f"{server_url.rstrip('/')}/api/v1/artifact_versions/{artifact_version_id}/visualize?index={index}"


def _get_json(url):
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def dashboard():
    chromium("the dashboard")
    pytest.importorskip("playwright", reason="playwright comes with the dev extra: make install")
    from zenml.config.global_config import GlobalConfiguration

    assert skip_onboarding()  # on the session's SQL store, before the server takes it over
    config_file = Path(GlobalConfiguration().config_directory) / "config.yaml"
    saved = config_file.read_text()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    started = _zenml("login", "--local", "--port", str(port), timeout=300)
    try:
        assert started.returncode == 0, started.stdout[-2000:] + started.stderr[-2000:]
        url = f"http://127.0.0.1:{port}"
        assert _get_json(f"{url}/api/v1/info")["deployment_type"] == "local"
        yield url
    finally:
        _zenml("logout", "--local", timeout=120)
        config_file.write_text(saved)  # the client of later tests talks to the SQL store again


def test_dashboard_shows_a_tiny_evaluation_run_and_serves_its_summary_report(first_run, dashboard, repo_root):
    from playwright.sync_api import sync_playwright

    run = first_run
    summary = step_output(run, "summarize", col.EVALUATION_SUMMARY)

    served = _get_json(f"{dashboard}/api/v1/runs/{run.id}")
    assert served["name"] == run.name and served["body"]["status"] == "completed"

    summary_artifact = run.steps["summarize"].outputs[col.EVALUATION_SUMMARY][0]
    report = _get_json(visualization_url(dashboard, str(summary_artifact.id)))
    assert report["type"] == "html"
    assert summary.models[0].model_id in report["value"] and "<table" in report["value"]

    screenshot = repo_root / "outputs" / "dashboard" / "run-page.png"
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(run_page_url(dashboard, str(run.id)), wait_until="networkidle", timeout=180_000)
            page.get_by_text(run.name).first.wait_for(timeout=120_000)
            page.get_by_text("generate_answers").first.wait_for(timeout=120_000)  # the run's DAG
            body = page.inner_text("body")
            page.screenshot(path=str(screenshot), timeout=180_000)
        finally:
            browser.close()
    assert "survey" not in page.url
    assert "summarize" in body and "evaluate_answers" in body
    assert screenshot.stat().st_size > 10_000
    print(f"dashboard screenshot: {screenshot}")
