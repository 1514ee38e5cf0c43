"""``python -m runtime`` is the ``mcp-runtime`` command."""

from .cli import main

raise SystemExit(main())
