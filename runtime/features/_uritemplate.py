"""RFC 6570 URI templates for MCP resource templates: validation, expansion and matching.

Expansion implements RFC 6570 levels 1-4 for string and list values (associative arrays are
not supported). Matching is the inverse: a concrete URI from ``resources/read`` is matched
against the template and the variables are extracted. Inversion is inherently ambiguous for
some templates (``{a}{b}``); the rules used here are documented on :meth:`UriTemplate.match`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote, unquote

__all__ = ["UriTemplate", "UriTemplateError", "is_template"]

MAX_TEMPLATE_LENGTH: Final = 1024
MAX_URI_LENGTH: Final = 8192
# Named operators (";", "?", "&") match any ordered subset of their variables with an
# alternation whose size is quadratic in the variable count; keep it small.
MAX_VARIABLES: Final = 64

# RFC 6570 §1.5: reserved = gen-delims / sub-delims. Passed through by "+" and "#" (§3.2.3).
_RESERVED: Final = ":/?#[]@!$&'()*+,;="
# RFC 6570 §2.3: varchar = ALPHA / DIGIT / "_" / pct-encoded; varname = varchar *(["."] varchar)
_VARCHAR: Final = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
_VARSPEC_RE: Final = re.compile(
    rf"(?P<name>{_VARCHAR}(?:\.?{_VARCHAR})*)"
    # §2.4: prefix = ":" max-length, max-length = %x31-39 0*3DIGIT; explode = "*"
    r"(?:(?P<explode>\*)|:(?P<prefix>[1-9][0-9]{0,3}))?"
)
_PCT_TRIPLET_RE: Final = re.compile(r"(%[0-9A-Fa-f]{2})")
_EXPRESSION_RE: Final = re.compile(r"\{[^{}]*\}")
# RFC 6570 §2.1: literals exclude CTL and SP (other excluded characters are tolerated).
_BAD_LITERAL_RE: Final = re.compile(r"[\x00-\x20\x7f]")
# Characters no match value may contain: controls and space are never valid in a URI.
_CTL: Final = r"\x00-\x20\x7f"


class UriTemplateError(ValueError):
    """The template text is not a valid RFC 6570 template (or exceeds our limits)."""


@dataclass(frozen=True, slots=True)
class _Operator:
    """One row of the RFC 6570 Appendix A operator table."""

    first: str
    sep: str
    named: bool
    ifemp: str
    allow_reserved: bool


# RFC 6570 §2.2 operators and Appendix A behaviour table.
_OPERATORS: Final[dict[str, _Operator]] = {
    "": _Operator("", ",", False, "", False),  # §3.2.2 simple string expansion
    "+": _Operator("", ",", False, "", True),  # §3.2.3 reserved expansion
    "#": _Operator("#", ",", False, "", True),  # §3.2.4 fragment expansion
    ".": _Operator(".", ".", False, "", False),  # §3.2.5 label expansion
    "/": _Operator("/", "/", False, "", False),  # §3.2.6 path segment expansion
    ";": _Operator(";", ";", True, "", False),  # §3.2.7 path-style parameters
    "?": _Operator("?", "&", True, "=", False),  # §3.2.8 form-style query
    "&": _Operator("&", "&", True, "=", False),  # §3.2.9 form-style query continuation
}
# RFC 6570 §2.2: op-reserve, reserved for future extensions.
_RESERVED_OPERATORS: Final = "=,!@|"

# Characters (besides controls) a matched value may not contain, per operator. A plain value
# stops at its operator's separator; an exploded value keeps separators (returned raw).
_EXCLUDED: Final[dict[str, str]] = {
    "": "/?#",
    "+": "",
    "#": "",
    ".": "./?#",
    "/": "/?#",
    ";": ";/?#",
    "?": "&#",
    "&": "&#",
}
_EXCLUDED_EXPLODED: Final[dict[str, str]] = {
    "": "/?#",
    "+": "",
    "#": "",
    ".": "/?#",
    "/": "?#",
    ";": "/?#",
    "?": "#",
    "&": "#",
}

# How a captured group turns into a variable value.
_PLAIN: Final = 0  # percent-decode
_NAMED: Final = 1  # "" or "=value": strip the "=", then percent-decode
_RAW: Final = 2  # exploded: returned as matched


@dataclass(frozen=True, slots=True)
class _VarSpec:
    name: str
    prefix: int | None
    explode: bool


@dataclass(frozen=True, slots=True)
class _Expression:
    operator: str
    varspecs: tuple[_VarSpec, ...]


def is_template(text: str) -> bool:
    """True when ``text`` contains an expression ``{...}`` (RFC 6570 §2.2)."""
    return _EXPRESSION_RE.search(text) is not None


def _parse(template: str) -> list[str | _Expression]:
    """Split a template into literals and expressions, validating per RFC 6570 §2."""
    if len(template) > MAX_TEMPLATE_LENGTH:
        raise UriTemplateError(f"template longer than {MAX_TEMPLATE_LENGTH} characters")
    parts: list[str | _Expression] = []
    seen: set[str] = set()
    pos = 0
    while pos < len(template):
        start = template.find("{", pos)
        literal = template[pos : len(template) if start < 0 else start]
        if "}" in literal:
            raise UriTemplateError(f"unbalanced '}}' at {pos + literal.index('}')}")
        if bad := _BAD_LITERAL_RE.search(literal):
            raise UriTemplateError(f"invalid literal character {bad.group()!r} (RFC 6570 §2.1)")
        if literal:
            parts.append(literal)
        if start < 0:
            break
        end = template.find("}", start)
        nested = template.find("{", start + 1)
        if end < 0 or 0 <= nested < end:
            raise UriTemplateError(f"unbalanced '{{' at {start}")
        expression = _parse_expression(template[start + 1 : end])
        for spec in expression.varspecs:
            if spec.name in seen:
                raise UriTemplateError(f"duplicate variable name {spec.name!r}")
            seen.add(spec.name)
        parts.append(expression)
        pos = end + 1
    if len(seen) > MAX_VARIABLES:
        raise UriTemplateError(f"more than {MAX_VARIABLES} variables")
    return parts


def _parse_expression(body: str) -> _Expression:
    """Parse ``operator? variable-list`` (RFC 6570 §2.2-§2.4)."""
    if not body:
        raise UriTemplateError("empty expression '{}'")
    operator = ""
    if body[0] in _RESERVED_OPERATORS:
        raise UriTemplateError(f"reserved operator {body[0]!r} (RFC 6570 §2.2)")
    if body[0] in _OPERATORS:
        operator, body = body[0], body[1:]
    if not body:
        raise UriTemplateError(f"expression {{{operator}}} has no variables")
    specs: list[_VarSpec] = []
    for text in body.split(","):
        m = _VARSPEC_RE.fullmatch(text)
        if m is None:
            if (
                text
                and not specs
                and not operator
                and text[0] not in "_%"
                and not text[0].isalnum()
            ):
                raise UriTemplateError(f"unknown operator {text[0]!r}")
            raise UriTemplateError(f"invalid variable specification {text!r} (RFC 6570 §2.3)")
        prefix = m.group("prefix")
        specs.append(
            _VarSpec(m.group("name"), int(prefix) if prefix else None, bool(m.group("explode")))
        )
    return _Expression(operator, tuple(specs))


def _encode(value: str, allow_reserved: bool) -> str:
    """Percent-encode ``value`` as UTF-8 (RFC 6570 §3.2.1).

    Unreserved characters always pass through; with ``allow_reserved`` (``+`` and ``#``),
    reserved characters and existing pct-encoded triplets pass through too.
    """
    if not allow_reserved:
        return quote(value, safe="")
    pieces = _PCT_TRIPLET_RE.split(value)  # odd indices are the triplets
    return "".join(p if i % 2 else quote(p, safe=_RESERVED) for i, p in enumerate(pieces))


def _truncate(value: str, length: int, allow_reserved: bool) -> str:
    """Apply a prefix modifier (RFC 6570 §2.4.1): the first ``length`` characters.

    When reserved expansion keeps pct-encoded triplets, a triplet counts as one character so
    that it is never cut in half.
    """
    if not allow_reserved:
        return value[:length]
    units: list[str] = re.findall(r"%[0-9A-Fa-f]{2}|.", value, re.DOTALL)
    return "".join(units[:length])


def _expand_expression(
    expr: _Expression, variables: Mapping[str, str | Sequence[str] | None]
) -> str:
    """Expand one expression following RFC 6570 §3.2.1 and the Appendix A algorithm."""
    op = _OPERATORS[expr.operator]
    pieces: list[str] = []
    for spec in expr.varspecs:
        value = variables.get(spec.name)
        if value is None:  # §2.3: undefined variables are skipped
            continue
        if isinstance(value, str):
            if spec.prefix is not None:
                value = _truncate(value, spec.prefix, op.allow_reserved)
            encoded = _encode(value, op.allow_reserved)
            if op.named:
                pieces.append(spec.name + (op.ifemp if not value else "=" + encoded))
            else:
                pieces.append(encoded)
            continue
        if not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
            raise TypeError(f"variable {spec.name!r} must be a str, a sequence of str, or None")
        if not value:  # §2.3: an empty list is undefined
            continue
        if spec.prefix is not None:  # §2.4.1: prefixes do not apply to composite values
            raise ValueError(f"prefix modifier on list variable {spec.name!r}")
        if not spec.explode:  # §3.2.1: comma-separated list
            joined = ",".join(_encode(v, op.allow_reserved) for v in value)
            pieces.append(f"{spec.name}={joined}" if op.named else joined)
        elif op.named:  # §2.4.2: explode repeats the name for each member
            pieces.append(
                op.sep.join(
                    spec.name + ("=" + _encode(v, op.allow_reserved) if v else op.ifemp)
                    for v in value
                )
            )
        else:
            pieces.append(op.sep.join(_encode(v, op.allow_reserved) for v in value))
    return op.first + op.sep.join(pieces) if pieces else ""


class UriTemplate:
    """A parsed, validated RFC 6570 URI template with a precompiled matcher."""

    __slots__ = ("_captures", "_parts", "_regex", "template", "variable_names")

    template: str
    variable_names: tuple[str, ...]

    def __init__(self, template: str) -> None:
        self.template = template
        self._parts = _parse(template)
        self.variable_names = tuple(
            spec.name
            for part in self._parts
            if isinstance(part, _Expression)
            for spec in part.varspecs
        )
        self._captures: list[tuple[str, str, int]] = []  # (group, variable, kind)
        self._regex = re.compile(self._build_pattern())

    # -- expansion -------------------------------------------------------------------------

    def expand(self, variables: Mapping[str, str | Sequence[str] | None]) -> str:
        """Expand the template (RFC 6570 §3). Missing or ``None`` variables are undefined."""
        return "".join(
            part if isinstance(part, str) else _expand_expression(part, variables)
            for part in self._parts
        )

    # -- matching --------------------------------------------------------------------------

    def match(self, uri: str) -> dict[str, str] | None:
        """Extract variables from ``uri``, or return None when it does not match.

        The whole URI must match; literals are compared exactly. Values are percent-decoded
        as UTF-8 (invalid UTF-8 means no match); ``+`` is not treated as a space. Per operator:

        - ``{x}`` matches one or more characters other than ``/``, ``?``, ``#``; ``{+x}``
          and ``{#x}`` (after ``#``) may contain any of them. With several variables in one
          expression, values may not contain the separator (``,``).
        - ``{/x}``, ``{.x}`` take one segment/label; ``{;x}`` accepts ``;x`` and ``;x=v``;
          ``{?x}``/``{&x}`` accept ``x=v``. Variables of these operators may be absent
          (then they are not in the result); named ones (``;?&``) must appear in template
          order, unnamed ones (``/.#``) are filled left to right.
        - An exploded variable (``{/x*}``, ``{?x*}``) is returned raw and undecoded, as the
          text it covers without the operator's leading character, for example
          ``"a/b"`` or ``"x=1&x=2"``; the caller splits it. Unless it is the last variable of
          its expression it covers one item. Prefix modifiers do not limit the length.
        - Ambiguity is resolved by taking the shortest value that lets the rest match, with
          commitments that keep matching linear-time: a value followed by literal text stops
          at that literal's first occurrence when more variables follow; in ``{a}{b}``, ``a``
          takes one character; in ``{+a}{?q}`` / ``{+a}{#f}`` / ``{a}{.b*}``, ``a`` stops at
          the first ``?`` / ``#`` / ``.``.
        """
        if len(uri) > MAX_URI_LENGTH:
            return None
        m = self._regex.fullmatch(uri)
        if m is None:
            return None
        result: dict[str, str] = {}
        for group, name, kind in self._captures:
            raw = m.group(group)
            if raw is None:
                continue  # absent optional variable (or another alternative's group)
            if kind == _RAW:
                result[name] = raw
                continue
            if kind == _NAMED:
                raw = raw[1:]
            try:
                result[name] = unquote(raw, errors="strict")
            except UnicodeDecodeError:
                return None
        return result

    def _build_pattern(self) -> str:
        """The matcher: negated classes and lazy quantifiers, so each value scans forward.

        To keep matching linear, variables never backtrack against each other. Within a run of
        adjacent expressions, a value may not contain the leading character of a later "?",
        "#" or exploded expression, and an expression followed by one without a leading
        character is atomic. A run and the literal after it are atomic when variables follow.
        """
        out: list[str] = []
        parts = self._parts
        i = 0
        while i < len(parts):
            part = parts[i]
            if isinstance(part, str):
                out.append(re.escape(part))
                i += 1
                continue
            j = i
            while j < len(parts) and isinstance(parts[j], _Expression):
                j += 1
            run = [p for p in parts[i:j] if isinstance(p, _Expression)]
            pieces = []
            for k, expr in enumerate(run):
                later = [_OPERATORS[e.operator].first for e in run[k + 1 :]]
                stops = "".join(
                    first
                    for e, first in zip(run[k + 1 :], later, strict=True)
                    if first in ("?", "#") or (first and any(v.explode for v in e.varspecs))
                )
                piece = self._expression_pattern(expr, stops)
                pieces.append(f"(?>{piece})" if "" in later else piece)
            pattern = "".join(pieces)
            if j + 1 < len(parts):  # parts[j] is a literal and more expressions follow
                pattern = f"(?>{pattern}{re.escape(str(parts[j]))})"
                j += 1
            out.append(pattern)
            i = j
        return "".join(out)

    def _var_pattern(
        self, spec: _VarSpec, operator: str, stops: str, several: bool, last: bool, required: bool
    ) -> str:
        group = f"g{len(self._captures)}"
        explode = spec.explode and last  # a mid-expression exploded value is one item
        excluded = (_EXCLUDED_EXPLODED if explode else _EXCLUDED)[operator] + stops
        if several and not explode and operator in ("", "+", "#"):
            excluded += ","
        value = f"[^{re.escape(excluded)}{_CTL}]" + ("+?" if required else "*?")
        if spec.explode:
            self._captures.append((group, spec.name, _RAW))
            return f"(?P<{group}>{value})"
        if _OPERATORS[operator].named:
            self._captures.append((group, spec.name, _NAMED))
            return f"{re.escape(spec.name)}(?P<{group}>(?:={value})?)"
        self._captures.append((group, spec.name, _PLAIN))
        return f"(?P<{group}>{value})"

    def _expression_pattern(self, expr: _Expression, stops: str) -> str:
        op = _OPERATORS[expr.operator]
        specs = expr.varspecs
        n = len(specs)
        first, sep = re.escape(op.first), re.escape(op.sep)

        def var(i: int, required: bool = False) -> str:
            return self._var_pattern(specs[i], expr.operator, stops, n > 1, i == n - 1, required)

        if not op.named:
            # Positional: later values are optional and filled left to right (§3.2.2-§3.2.6).
            tail = ""
            for i in reversed(range(1, n)):
                tail = f"(?:{sep}{var(i)}{tail})?"
            if not op.first:  # "" and "+": the first value is required and non-empty
                return var(0, required=True) + tail
            return f"(?:{first}{var(0)}{tail})?"  # vanishes when all are undefined
        # ";", "?", "&": any non-empty ordered subset; one alternative per first present var.
        alternatives = []
        for i in range(n):
            alternatives.append(var(i) + "".join(f"(?:{sep}{var(k)})?" for k in range(i + 1, n)))
        return f"(?:{first}(?:{'|'.join(alternatives)}))?"

    # -- identity --------------------------------------------------------------------------

    def __str__(self) -> str:
        return self.template

    def __repr__(self) -> str:
        return f"UriTemplate({self.template!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, UriTemplate):
            return NotImplemented
        return self.template == other.template

    def __hash__(self) -> int:
        return hash(self.template)
