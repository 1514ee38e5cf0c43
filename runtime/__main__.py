"""``python -m runtime`` is the ``mcp-runtime`` command."""

from ._cli import main

raise SystemExit(main())
