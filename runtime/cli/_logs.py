"""The CLI's log lines on stderr: ``--log-format text`` (key=value) or ``json``.

Either way a record is one line: what a peer or the user's code put in a message (a line
break, an escape sequence) cannot start a line that reads as a record of its own.
"""

from __future__ import annotations

import logging
import re
import sys
from typing import Any

__all__ = ["configure_logging"]


class _JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message (and the traceback, if any)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        import json  # only for --log-format json (start-up time)

        from ..framing import escape_json_text

        # The encoder escapes U+0000-U+001F only; U+2028 and the like would still break a
        # line for some readers (``escape_json_text``).
        return escape_json_text(json.dumps(entry, ensure_ascii=False))


#: What a terminal or a line-oriented reader takes for a line break or a control sequence
#: (str.splitlines' separators, C0 but the tab, DEL, C1).
_BREAKS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def _escape_break(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]  # "\\n", "\\x1b", "\\u2028"


class _TextFormatter(logging.Formatter):
    """``--log-format text``: a record's first line starts at column 0 and nothing else
    does. A line break or control character in the message is escaped and a traceback is
    indented, so that text in a log line, whoever chose it (the sites that log what a peer
    sent escape it already: ``runtime.framing.loggable``; an exception's message may
    carry it too), cannot start a line that reads as a record of its own."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return _BREAKS.sub(_escape_break, super().formatMessage(record))

    def formatException(self, ei: Any) -> str:
        return _indent(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return _indent(super().formatStack(stack_info))


def _indent(text: str) -> str:
    return "\n".join("  " + _BREAKS.sub(_escape_break, line) for line in text.split("\n"))


def configure_logging(level: str, log_format: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(
            _TextFormatter("%(asctime)s level=%(levelname)s logger=%(name)s %(message)s")
        )
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
