"""Screenshots of a standalone HTML report for the docs: its summary, its row browser, and labelling in it.

    .venv/bin/python docs/screenshots.py outputs/reports/<run>.html docs/images

Drives Debian's Chromium headless through Playwright (as the browser tests do), offline.
"""

import shutil
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright


def main(report: Path, folder: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            page = browser.new_context(viewport={"width": 1500, "height": 1000}, offline=True).new_page()
            page.goto(report.resolve().as_uri())
            page.screenshot(path=str(folder / "report-summary.png"))
            page.evaluate("window.scrollTo(0, document.getElementById('model-filter').closest('div').offsetTop - 60)")
            page.screenshot(path=str(folder / "report-rows.png"))
            for key in "3231":  # two rows labelled by keys; the third row's first criterion is outlined next
                page.keyboard.press(key)
            page.evaluate("window.scrollTo(0, document.getElementById('label-next').closest('div').offsetTop - 20)")
            page.screenshot(path=str(folder / "report-labelling.png"))
        finally:
            browser.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
