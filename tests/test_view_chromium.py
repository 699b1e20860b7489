"""The tree view in a real headless Chromium (Debian's ``chromium`` package).

The page is opened from disk (no server, no network), a real mouse click lands on
a root, and the evidence panel must show the support path and the verbatim
evidence with dates. A screenshot is saved under the test's tmp dir. The browser is
driven over the Chrome DevTools protocol on a pipe (``--remote-debugging-pipe``) by
the small client below, so no browser is ever downloaded and no port is opened.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from personatree import PersonaTree
from personatree.demo import sample_interactions
from personatree.view import tree_html

from .test_cli import seed_claims

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install -y chromium)")


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


class Chromium:
    """A headless Chromium driven over ``--remote-debugging-pipe`` (fd 3 in, fd 4 out)."""

    def __init__(self, executable: str, profile_dir: Path, width: int = 1440, height: int = 900) -> None:
        to_child_r, self._to_child_w = os.pipe()
        self._from_child_r, from_child_w = os.pipe()

        def fds() -> None:
            # Chromium reads commands from fd 3 and writes replies to fd 4. Move both ends
            # above 4 first so that neither dup2 clobbers the other.
            a = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [executable, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile_dir}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, close_fds=False,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def _read(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from chromium")
            ready, _, _ = select.select([self._from_child_r], [], [], left)
            if ready:
                chunk = os.read(self._from_child_r, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe")
                self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, params: dict[str, Any] | None = None, *, session: bool = True,
             timeout: float = 30.0) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to_child_w, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read(timeout)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        for i, ev in enumerate(self.events):
            if ev.get("method") == method:
                return self.events.pop(i)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ev = self._read(deadline - time.monotonic())
            if ev.get("method") == method:
                return ev
            self.events.append(ev)
        raise TimeoutError(method)

    def goto(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def js(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"JS error: {r['exceptionDetails']}")
        return r["result"].get("value")

    def click(self, x: float, y: float) -> None:
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent",
                      {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.call("Browser.close", session=False, timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_child_w)
        os.close(self._from_child_r)




@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    assert CHROMIUM is not None
    c = Chromium(CHROMIUM, tmp_path_factory.mktemp("chromium-profile"))
    yield c
    c.close()


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    """The view of the sample user, with two patterns, a claim and a conflict."""
    d = tmp_path_factory.mktemp("view")
    user, items = sample_interactions()
    tree = PersonaTree.open(d / "view.db", embedder=embedder)
    try:
        tree.observe_many(user, items)
    finally:
        tree.close()
    seed_claims(str(d / "view.db"), user)
    tree = PersonaTree.open(d / "view.db", embedder=embedder)
    try:
        html = tree_html(tree, user)
    finally:
        tree.close()
    out = d / "maya.html"
    out.write_text(html, encoding="utf-8")
    return out


def test_click_a_root_shows_its_evidence(browser: Chromium, page: Path, tmp_path: Path) -> None:
    browser.goto(page.resolve().as_uri())
    assert browser.js("document.body.dataset.ready") == "1"
    assert browser.js("document.querySelectorAll('.card.root').length") == 1
    assert browser.js("document.querySelectorAll('.card.mid').length") == 2
    assert browser.js("document.querySelectorAll('.card.conflict').length") == 1
    # Roots sit above their patterns, patterns above the evidence.
    tops = browser.js("""['root','mid','leaf'].map(l => Math.min(...Array.from(
        document.querySelectorAll('.card.' + l)).map(e => e.getBoundingClientRect().top)))""")
    assert tops[0] < tops[1] < tops[2]
    # Confidence shows as opacity: the claim is drawn more solid than a fresh leaf.
    op = browser.js("""[document.querySelector('.card.root'), document.querySelector('.card.leaf')]
        .map(e => parseFloat(e.style.opacity))""")
    assert op[0] > op[1]
    assert browser.js("document.querySelector('#evidence')") is None
    browser.screenshot(tmp_path / "view-initial.png")

    x, y = browser.js("""(() => { const r = document.querySelector('.card.root').getBoundingClientRect();
        return [r.left + r.width / 2, r.top + r.height / 2]; })()""")
    browser.click(x, y)
    state = browser.js("""(() => {
        const ev = document.querySelector('#evidence');
        const vis = ev && ev.getBoundingClientRect().height > 0 && getComputedStyle(ev).display !== 'none';
        return {visible: !!vis, text: ev ? ev.innerText : '',
                path: document.querySelector('#support-path').innerText,
                selected: document.querySelector('.card.sel').dataset.id,
                badEvidence: document.querySelectorAll('#evidence .ev.bad').length,
                hot: document.querySelectorAll('#edges path.hot').length}; })()""")
    assert state["visible"] and state["selected"] == "root_calm"
    assert "Values calm, nature and simple pleasures" in state["path"]
    assert "I love hiking, so the coastal trails near Cascais" in state["text"]  # verbatim evidence
    assert "2024-03-02" in state["text"]  # with its date
    assert "counter-evidence (1)" in state["text"].lower() and state["badEvidence"] == 1
    assert state["hot"] > 0  # the support edges light up
    shot = browser.screenshot(tmp_path / "view-root-selected.png")
    assert shot.stat().st_size > 20_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # A leaf shows its observation; the support path runs root → mid → leaf.
    x, y = browser.js("""(() => { const r = document.querySelector('.card.leaf[data-id]').getBoundingClientRect();
        return [r.left + r.width / 2, r.top + r.height / 2]; })()""")
    browser.click(x, y)
    steps = browser.js("document.querySelectorAll('#support-path li').length")
    assert steps == 3
    assert "user:" in browser.js("document.querySelector('#evidence').innerText")


def test_page_needs_no_network(page: Path) -> None:
    html = page.read_text()
    for ref in ("<script src", "<link", "@import", "url(http", "fetch("):
        assert ref not in html
    # Stored text cannot close the data block early.
    payload = html.split('<script id="pt-data" type="application/json">', 1)[1].split("</script>", 1)[0]
    assert json.loads(payload)["user"] == "maya"


def test_a_changed_pattern_reads_current_state_first(browser: Chromium, page: Path) -> None:
    payload = page.read_text().split('<script id="pt-data" type="application/json">', 1)[1].split("</script>", 1)[0]
    nodes = json.loads(payload)["nodes"]
    hike, calm = nodes["mid_hike"], nodes["mid_quiet"]
    assert hike["changed"] == "2024-06-22T11:10:00+00:00" and "stopped hiking" in nodes[hike["now"]]["content"]
    assert calm["changed"] is None and calm["now"] is None
    # Its stored text says she loves hiking; the card says what changed, first.
    browser.goto(page.resolve().as_uri())
    card = browser.js("document.querySelector('.card[data-id=\"mid_hike\"]').innerText")
    assert "changed 2024-06-22" in card
    assert card.index("now:") < card.index("stopped hiking") < card.index("before:") < card.index("Loves hiking")
    assert "now:" not in browser.js("document.querySelector('.card[data-id=\"mid_quiet\"]').innerText")
