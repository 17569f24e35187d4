"""Debian's headless Chromium driven by Playwright's Python package, for the tests that load a
page in a real browser. Playwright's own browser download is never used (it needs the network):
the executable is ``/usr/bin/chromium`` (``apt-get install chromium``; ``make chromium``).

``browser()`` skips the test, saying why, when Playwright or the chromium binary is missing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = os.environ.get("MODSCOPE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@contextmanager
def browser() -> Iterator[Any]:
    """A launched Chromium (Playwright's ``Browser``), closed after the block."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"chromium is not installed at {CHROMIUM} (apt-get install chromium, or make chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


class PageWatch:
    """What a page did while open: console messages of type error, uncaught exceptions, every
    request it made, and those that failed (no answer, or an HTTP error status)."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.failed: list[str] = []
        page.on("requestfailed", lambda r: self.failed.append(f"{r.url}: {r.failure}"))
        page.on("response", lambda r: self.failed.append(f"{r.url}: HTTP {r.status}") if r.status >= 400 else None)
        page.on("console", lambda m: self.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        page.on("request", lambda r: self.requests.append(r.url))
