"""Label values for metrics and traces: only names the server knows.

A client chooses every string it sends: the method, a tool's or prompt's name, a resource's
URI. Used as a metric label (or a span name, which trace backends aggregate by) each new
string is a new time series, kept for the life of the process: a client sending made-up
names grows the server's memory and its monitoring bill without bound, and a cap on
distinct values ("the first 64, then other") would let it crowd the real names out. So a
label is a name the server knows (an MCP method, a registered tool, prompt or resource)
or the one value :data:`UNKNOWN`: the label sets stay as large as the server made them,
whatever clients send, and a known name is always labelled as itself. Each lookup is a set
or dict membership test (a resource template is matched only for a URI no fixed resource
has).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ..protocol import CLIENT_METHODS

if TYPE_CHECKING:
    from ..features import App, Registry

__all__ = ["UNKNOWN", "KnownNames", "method_label"]

#: The label of every name the server does not know.
UNKNOWN: Final = "unknown"


def method_label(method: str) -> str:
    """``method`` when it is an MCP method a client may send (``CLIENT_METHODS``), else
    :data:`UNKNOWN`."""
    return method if method in CLIENT_METHODS else UNKNOWN


class KnownNames:
    """The tools, prompts and resources of the servers a middleware was bound to
    (``Middleware.bind``; a mounted server's own chain binds its middleware to it too),
    read at each lookup: a tool registered or removed while serving is known or not from
    then on."""

    __slots__ = ("_registries",)

    def __init__(self) -> None:
        self._registries: tuple[Registry, ...] = ()

    def bind(self, app: App) -> None:
        registry = app.registry
        if all(registry is not known for known in self._registries):
            self._registries += (registry,)

    def tool(self, name: str) -> str:
        """``name`` when a bound server has a tool of that name, else :data:`UNKNOWN`."""
        for registry in self._registries:
            if name in registry.tools:
                return name
        return UNKNOWN

    def prompt(self, name: str) -> str:
        """``name`` when a bound server has a prompt of that name, else :data:`UNKNOWN`."""
        for registry in self._registries:
            if name in registry.prompts:
                return name
        return UNKNOWN

    def resource(self, uri: str) -> str:
        """``uri`` when it is a bound server's resource; the template (``notes://{name}``)
        of the first resource template that matches it; else :data:`UNKNOWN`."""
        for registry in self._registries:
            if uri in registry.resources:
                return uri
        for registry in self._registries:
            found = registry.find_template(uri)
            if found is not None:
                return found[0].template.template
        return UNKNOWN
