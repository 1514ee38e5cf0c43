"""A mkdocs hook: the Sphinx roles of the runtime's docstrings (``:class:`Client```), which
mkdocstrings leaves in the text, shown as the code they name."""

from __future__ import annotations

import re
from typing import Any

#: A role as rendered: ``:class:`` before the code element of its target.
_ROLE = re.compile(r":(?:class|func|meth|data|attr|mod|exc|obj):(?=<code>)")


def on_page_content(html: str, **_: Any) -> str:
    return _ROLE.sub("", html)
