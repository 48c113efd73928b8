"""A report opened in real headless Chromium (Debian's, driven by Playwright), offline: a report that fetched
anything (a CDN script, a font) would fail in it."""

import os
import shutil
from contextlib import contextmanager

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(what="the report"):
    """Debian's Chromium; where it is missing, the test is skipped (on CI it fails: `make browser` installs it)."""
    if CHROMIUM is None and os.environ.get("CI"):
        pytest.fail(f"Chromium is not installed, and on CI {what} must be tested: `make browser` installs it")
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed: `make browser` installs Debian's chromium (needs root and apt)")
    return CHROMIUM


@contextmanager
def report_page(html_path, width=1500, height=900):
    executable = chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            page = browser.new_context(viewport={"width": width, "height": height}, offline=True).new_page()
            page.goto(html_path.as_uri())
            yield page
        finally:
            browser.close()


def download_all(page, count, folder):
    """Click "Download labels" and save the `count` files it downloads, sorted by path."""
    downloads = []
    page.on("download", lambda download: downloads.append(download))
    page.click("#download-labels")
    for _ in range(100):
        if len(downloads) >= count:
            break
        page.wait_for_timeout(50)
    assert len(downloads) == count, [d.suggested_filename for d in downloads]
    saved = []
    for download in downloads:
        saved.append(folder / download.suggested_filename)
        download.save_as(saved[-1])
    return sorted(saved)
