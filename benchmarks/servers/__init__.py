"""Equivalent servers: tool ``echo(text: str) -> str`` and the 1,024-byte text resource ``mem://blob``."""
