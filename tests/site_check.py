"""Checks on the built documentation site, run by .ci/run after ``mkdocs build --strict``
(``python -m tests.site_check SITE_DIR``): the API reference shows what a user looks for,
and no docstring markup is left as text."""

from __future__ import annotations

import re
import sys
from pathlib import Path

#: A Sphinx role left in the text (mkdocstrings does not render them; docs/hooks does).
ROLE = re.compile(r":(?:class|func|meth|data|attr|mod|exc|obj):")
#: Objects each reference page must document, by their anchor ids.
EXPECTED = {
    "reference/runtime/index.html": [
        "runtime._server.Server",
        "runtime._context.Context.info",
        "runtime._context.Context.debug",
        "runtime._context.Context.warning",
        "runtime._context.Context.error",
    ],
    "reference/client/index.html": [
        "runtime.client.open_client",
        "runtime.client.Client",
        "runtime.client.OAuth",
        "runtime.client.RequestTimeout",
    ],
    "reference/bridge/index.html": [
        "runtime.bridge.proxy_server",
        "runtime.authserver.require_login",
    ],
}


def problems(site: Path) -> list[str]:
    found = []
    for page in sorted((site / "reference").rglob("*.html")):
        for match in ROLE.finditer(page.read_text()):
            found.append(f"{page.relative_to(site)}: a Sphinx role as text: {match.group(0)}")
    for name, anchors in EXPECTED.items():
        html = (site / name).read_text()
        found += [f"{name}: no {anchor}" for anchor in anchors if f'id="{anchor}"' not in html]
    server = (site / "reference/runtime/index.html").read_text()
    # The Server's example is a code block, not a paragraph of its lines run together.
    if not re.search(r'<code>.*?<span class="nd">@app</span>', server, re.DOTALL):
        found.append("reference/runtime: the Server's example is not a code block")
    return found


if __name__ == "__main__":
    found = problems(Path(sys.argv[1]))
    print("\n".join(found) or "site checks passed")
    sys.exit(1 if found else 0)
