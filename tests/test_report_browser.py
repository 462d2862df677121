"""The HTML report as a person sees it: rendered by a real browser (Chromium, headless, from Debian's
``chromium`` package), every image loaded, no broken reference, the answer first; a screenshot is kept
(``CPUSTUDY_SCREENSHOT_DIR``, default the test's folder) to look at. Skipped, with the reason, where no
Chromium is installed."""

from __future__ import annotations

import base64
import html.parser
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

BROWSER = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no Chromium here (apt-get install chromium)")


class _Refs(html.parser.HTMLParser):
    """Every image source and link target of a page, and its headings in order."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.links: list[str] = []
        self.headings: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.images.append(a.get("src") or "")
        if tag == "a":
            self.links.append(a.get("href") or "")
        if tag in ("h1", "h2"):
            self._in = tag

    def handle_data(self, data):
        if self._in:
            self.headings.append(data.strip())
            self._in = None


def _chromium(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(BROWSER), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=timeout)


def test_the_report_page_renders_in_a_browser_with_every_image_and_the_answer_first(woolf_report, tmp_path):
    _, out = woolf_report
    page = out / "index.html"
    url = page.resolve().as_uri()
    dom = _chromium("--virtual-time-budget=10000", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    refs = _Refs()
    refs.feed(dom.stdout)
    # The DOM the browser built: the title, then the answer before anything else.
    assert refs.headings[:2] == ["Which CPU configuration trains fastest and cheapest?", "The answer"]
    assert len(refs.images) == 9
    for src in refs.images:  # self-contained: each image a PNG in the page itself
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    for href in refs.links:  # every link beside the page resolves (the charts' SVGs, summary.csv)
        if not re.match(r"^[a-z]+:", href) and not href.startswith("#"):
            assert (out / href).is_file(), href
    failed = [line for line in dom.stderr.splitlines() if "Failed to load resource" in line or "ERR_" in line]
    assert failed == []
    shots = Path(os.environ.get("CPUSTUDY_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / "report-1366x900.png"
    r = _chromium("--window-size=1366,900", f"--screenshot={shot}", url)
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (900, 1366)
    assert pixels.reshape(-1, pixels.shape[-1]).std(axis=0).max() > 0.05  # text and charts, not a blank page
