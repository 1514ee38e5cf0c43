"""A target whose import fails: the CLI must say so in one line."""

raise RuntimeError("this module is broken on purpose")
