"""The answer page in a real browser: Debian's chromium driven by Playwright, a phone's screen.

Skipped, saying why, where either is missing (`.ci/run` installs both where it can). With
``REGULATOR_SHOTS_DIR`` set, the pages are also saved there as PNG (docs/reaching-people.md's
screenshots are made so).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from .test_answer_links import Setup, finish, phones, served

__all__ = ["phones", "served"]  # fixtures, used by name

CHROMIUM = os.environ.get("REGULATOR_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - depends on the machine
    sync_playwright = None  # type: ignore[assignment]

needs_browser = pytest.mark.skipif(
    sync_playwright is None or not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)),
    reason=(
        "no real browser: the playwright package is not installed"
        if sync_playwright is None
        else f"no real browser: {CHROMIUM} is missing (Debian: apt-get install -y chromium)"
    ),
)


def _shot(page: object, name: str) -> None:
    where = os.environ.get("REGULATOR_SHOTS_DIR")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(where) / name), full_page=True)  # type: ignore[attr-defined]


@pytest.mark.slow
@needs_browser
def test_a_consent_answered_in_chromium_on_a_phone_sized_screen(served: Setup) -> None:
    asking = served.ask(
        "--kind",
        "consent",
        "--subject",
        "release 1.4",
        "--question",
        "Publish 1.4 to PyPI now? <b>The changelog</b> is in \x1b[1mCHANGES.md\x1b[0m.",
        "--action",
        "twine upload dist/regulator-1.4*",
    )
    link = served.link("alice", "release 1.4")
    assert sync_playwright is not None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            context = browser.new_context(
                viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True
            )
            page = context.new_page()
            page.goto(link)
            # The agent's markup and escapes are text on the page, never markup or control.
            question = page.locator("p.text").first.inner_text()
            assert "<b>The changelog</b>" in question and "\\x1b[1m" in question
            assert page.locator("b").count() == 0
            assert "twine upload dist/regulator-1.4*" in page.locator(".action").inner_text()
            _shot(page, "answer-page.png")
            page.fill("textarea[name=note]", "after the tag is pushed")
            page.click("button[value=yes]")
            # The second step restates the action; nothing is answered yet.
            page.wait_for_selector("text=Authorize this?")
            assert "twine upload dist/regulator-1.4*" in page.locator(".action").inner_text()
            assert asking.poll() is None
            _shot(page, "answer-page-confirm.png")
            page.click("text=Yes, authorize it")
            page.wait_for_selector("text=Answered")
            _shot(page, "answer-page-done.png")
            code, out, err = finish(asking)
            assert code == 0, err
            assert out.splitlines() == ["yes", "after the tag is pushed"]
            # Back and again: the link works once.
            page.goto(link)
            assert "used already" in page.locator("body").inner_text()
            _shot(page, "answer-page-used.png")
        finally:
            browser.close()


@pytest.mark.slow
@needs_browser
def test_a_choice_is_one_press_in_chromium(served: Setup) -> None:
    asking = served.ask(
        "--kind",
        "choice",
        "--subject",
        "retention",
        "--question",
        "How long should CI logs be kept?",
        "--option",
        "7 days",
        "--option",
        "30 days",
        "--option",
        "1 year",
    )
    link = served.link("alice", "retention")
    assert sync_playwright is not None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 390, "height": 844})
            page.goto(link)
            _shot(page, "answer-page-choice.png")
            page.click("text=2. 30 days")
            page.wait_for_selector("text=Answered")
        finally:
            browser.close()
    code, out, err = finish(asking)
    assert code == 0, err
    assert out.splitlines() == ["30 days"]
