"""Drive a real headless Chromium over the DevTools protocol, with no Python dependency.

Chromium is started with ``--remote-debugging-pipe``: it reads protocol messages from file
descriptor 3 and writes replies and events to descriptor 4, each a JSON text ended by a NUL
byte. That is the whole transport, so no websocket client is needed. Debian's ``chromium``
package provides the browser (``tests/support/prepare.d/30-chromium.sh`` installs it).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("AK_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--mute-audio",
]


class BrowserError(RuntimeError):
    """The browser answered a command with an error, or stopped answering."""


class Browser:
    """One headless Chromium process and its protocol pipe."""

    def __init__(self, executable: str = CHROMIUM, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="ak-chromium-")
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()

        def wire_pipes() -> None:  # runs in the child, before exec
            os.dup2(to_browser_read, 3)
            os.dup2(from_browser_write, 4)

        self.process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-pipe"],
            pass_fds=(3, 4),
            preexec_fn=wire_pipes,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    # -- transport ----------------------------------------------------------------------

    def send(self, method: str, params: dict[str, Any] | None = None, session: str = "") -> Any:
        """Send a command and wait for its result; events that arrive meanwhile are kept."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str = "") -> dict[str, Any]:
        """Wait for an event (one already received counts) and return it."""
        for event in self.events:
            if event.get("method") == method and event.get("sessionId", "") == session:
                self.events.remove(event)
                return event
        while True:
            event = self._receive()
            if event.get("method") == method and event.get("sessionId", "") == session:
                return event
            self.events.append(event)

    def _receive(self) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._from_browser], [], [], max(left, 0))
            if not ready:
                raise BrowserError(f"no answer from Chromium within {self.timeout:.0f}s")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError("Chromium closed the protocol pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(raw)
        return parsed

    def close(self) -> None:
        """Stop the browser and remove its profile."""
        try:
            if self.process.poll() is None:
                with contextlib.suppress(BrowserError, OSError):
                    self.send("Browser.close")
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        finally:
            for fd in (self._to_browser, self._from_browser):
                with contextlib.suppress(OSError):
                    os.close(fd)
            shutil.rmtree(self.profile, ignore_errors=True)

    def new_page(self, width: int = 1600, height: int = 1000) -> Page:
        """Open a blank tab with the given viewport, with console, log and network recorded."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.send(f"{domain}.enable")
        page.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        return page


class Page:
    """One tab: navigate, evaluate, click, screenshot; problems it reported are collected."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def send(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.browser.send(method, params, self.session)

    def open(self, path: Path) -> None:
        """Load a local file and wait for its load event."""
        self.send("Page.navigate", {"url": path.resolve().as_uri()})
        self.browser.wait_for("Page.loadEventFired", self.session)

    def evaluate(self, expression: str) -> Any:
        """Evaluate JavaScript in the page and return its value."""
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def click(self, x: float, y: float) -> None:
        """Press and release the left mouse button at a point, as a user would."""
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for kind in ("mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1},
            )

    def click_selector(self, selector: str) -> None:
        """Click the centre of the first element matching a CSS selector."""
        box = self.evaluate(
            "(() => { const e = document.querySelector(" + json.dumps(selector) + ");"
            " if (!e) return null; e.scrollIntoView({block: 'center'});"
            " const r = e.getBoundingClientRect();"
            " return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()"
        )
        if box is None:
            raise BrowserError(f"nothing matches {selector!r}")
        self.click(box["x"], box["y"])

    def screenshot(self, path: Path) -> None:
        """Save a PNG of the viewport."""
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries the page produced."""
        found = []
        for event in self.browser.events:
            if event.get("sessionId") != self.session:
                continue
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(f"exception: {params['exceptionDetails']}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                found.append(f"log: {params['entry'].get('text')} {params['entry'].get('url')}")
        return found

    def requests(self) -> list[str]:
        """Every URL the page requested."""
        return [
            event["params"]["request"]["url"]
            for event in self.browser.events
            if event.get("sessionId") == self.session
            and event.get("method") == "Network.requestWillBeSent"
        ]

    def settle(self) -> None:
        """Let pending events in (a round trip through the page's event loop)."""
        self.evaluate("new Promise(r => requestAnimationFrame(() => setTimeout(r, 50)))")


def available() -> bool:
    """Tell whether the Chromium executable is installed."""
    return shutil.which(CHROMIUM) is not None or Path(CHROMIUM).is_file()
