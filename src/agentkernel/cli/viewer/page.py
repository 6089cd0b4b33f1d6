"""Assemble the viewer page: one self-contained HTML file, loading nothing.

The bundle's data is embedded as JSON in a ``<script type="application/json">`` block with
``<``, ``>``, ``&`` and the JavaScript line separators escaped, so no document text can
close the block or open markup. A Content-Security-Policy allows exactly the page's own
script and style (by hash) and forbids every fetch, so even a renderer bug could not run
injected script or reach the network.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from importlib import resources
from typing import Any

from agentkernel.cli.viewer.bundle import ViewerPage

_SLOT = re.compile(r"\{\{(csp|title|style|script|data)\}\}")
_JSON_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def embed_json(value: Any) -> str:
    """Serialise a value as JSON safe to place inside an HTML ``<script>`` element.

    Args:
        value: Plain data.

    Returns:
        JSON text containing none of ``<``, ``>``, ``&``, U+2028 or U+2029.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return re.sub("[<>&\u2028\u2029]", lambda m: _JSON_ESCAPES[m.group(0)], text)


def build_page(view: ViewerPage) -> str:
    """Render the whole page for a bundle.

    Args:
        view: What the page shows.

    Returns:
        The HTML document.
    """
    assets = resources.files("agentkernel.cli.viewer")
    template = assets.joinpath("template.html").read_text(encoding="utf-8")
    style = assets.joinpath("viewer.css").read_text(encoding="utf-8")
    script = "\n".join(
        assets.joinpath(name).read_text(encoding="utf-8") for name in ("layout.js", "viewer.js")
    )
    csp = "; ".join(
        [
            "default-src 'none'",
            f"script-src '{_digest(script)}'",
            f"style-src '{_digest(style)}'",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )
    slots = {
        "csp": html.escape(csp, quote=True),
        "title": html.escape(view.title),
        "style": style,
        "script": script,
        "data": embed_json(view.as_json()),
    }
    # one pass over the template: text substituted into a slot is never scanned again
    return _SLOT.sub(lambda m: slots[m.group(1)], template)


def _digest(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")
