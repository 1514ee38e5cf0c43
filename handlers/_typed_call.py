"""``tools/call`` params read in one typed pass, the arguments included.

The general reading of a call is two passes over the arguments: ``params`` with the arguments
kept raw (msgspec still walks every byte of them to find their end), then the tool's own
decoder over the raw arguments. For a 1 MiB argument each pass is most of a request's whole
decode. Here every tool whose arguments decode with plain msgspec rules (strict, no decode
hook) gets a params struct tagged by its name (``{"name": <tool>, "arguments": <its
arguments struct>, ...}``); one decoder of the union of them all reads ``params``, their
``_meta`` and the arguments in a single pass. That reading is a :class:`TypedCall`, the
``runtime.protocol.ToolCall`` the core and the transports carry to the handler.

Only the success path is new: whatever this reading refuses (an unknown or unlisted tool,
invalid arguments, a name given twice, a ``_meta`` that is not an object, a tool that needs a
decode hook) gives None, and the caller reads the request the general way, which produces the
same result or error as always. The union is rebuilt after the tool list changes (the
registry's change relay) and every reading is checked against the registry, so a tool
replaced behind the registry's back is never read with its old arguments struct.

Who reads first (each keeps the reading in ``ctx.prepared``, or hands it on to be kept there):

- the core's stream reader, a whole frame over ``ONE_PASS_OVER`` bytes (:meth:`TypedCalls.pre_read`,
  the composition root's ``Dispatcher.pre_read``), alone or inside a batch;
- the HTTP transport, a POST's body (the same ``pre_read``) or a call's params
  (:meth:`TypedCalls.read`), for the 2026-07-28 era and header rules;
- era selection, a big call nobody read before (:meth:`TypedCalls.for_request`).

The handler takes the reading back with :meth:`TypedCalls.for_request`.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, ClassVar, Final

import msgspec
from msgspec import UNSET, Raw, UnsetType

from runtime.core import RequestContext
from runtime.features import Change, Registry, ToolDef
from runtime.protocol import ONE_PASS_OVER, TOOLS_CALL, Envelope, split_batch_params, split_params

from ._common import InputFields

__all__ = ["TypedCall", "TypedCalls"]


class TypedCall(InputFields, dict=True, kw_only=True):
    """A ``tools/call``'s params read in its tool's one typed pass: the fields of the general
    reading (``tools._CallParams``), with ``_meta`` decoded (an object, or None when absent)
    and ``arguments`` typed by the tool's own struct. Implements ``runtime.protocol.ToolCall``.

    One subclass per eligible tool, tagged by its name, under a base of the reader that
    built it (:class:`TypedCalls`); its class attributes say what the reading was made with:
    the tool's ``name`` and the ``tool``."""

    name: ClassVar[str]
    tool: ClassVar[ToolDef]
    arguments: msgspec.Struct | UnsetType = UNSET
    task: dict[str, Any] | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")
    if TYPE_CHECKING:
        #: The params this is a reading of. Set by the reader right after the decode, never
        #: a field: no key of the client's JSON can fill it (``dict=True`` gives it room).
        raw: Raw


def _eligible(tool: ToolDef) -> bool:
    decoder = tool.signature.json_decoder
    return bool(decoder.strict) and decoder.dec_hook is None


#: A frame read by :meth:`TypedCalls.pre_read`: one request's envelope and the reading of its
#: params; or a batch's items and, by index, the envelope and reading of the items read.
PreRead = tuple[Envelope, TypedCall] | tuple[list[Raw], dict[int, tuple[Envelope, TypedCall]]]

#: One reader per registry (``TypedCalls.of``): the transport, era selection and the handler
#: share its readings.
_readers: Final[weakref.WeakKeyDictionary[Registry, TypedCalls]] = weakref.WeakKeyDictionary()


class TypedCalls:
    """The one-pass reader of ``tools/call`` params for ``registry``'s tools.

    One per server (:meth:`of`), shared by whoever reads a call first and by the
    ``tools/call`` handler, which takes that reading back (:meth:`for_request`), so a
    request's params are read once.
    """

    __slots__ = ("_built", "_decoder", "_registry", "_tools", "_yours")

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._tools = registry.tools  # (the registry's one dict, changed in place)

        class Yours(TypedCall, kw_only=True):
            """The base of every struct this reader builds: ``isinstance`` with it tells, in
            one test, a reading of this reader's (another server's is never taken) and that
            it is a ``TypedCall``."""

        self._yours: type[TypedCall] = Yours
        #: The union's decoder (None: not built for the current tool list, or no tool is
        #: eligible: ``_built`` tells which).
        self._decoder: msgspec.json.Decoder[TypedCall] | None = None
        self._built = False
        registry.changes.relays.append(self._on_change)

    def _on_change(self, change: Change) -> None:
        if change == ("list", "tools"):
            self._stale()

    def _stale(self) -> None:
        self._decoder = None
        self._built = False

    def _build(self) -> msgspec.json.Decoder[TypedCall] | None:
        members: list[type] = []
        for name, tool in self._registry.tools.items():
            if not _eligible(tool):
                continue
            members.append(
                msgspec.defstruct(
                    f"_Call{len(members)}",
                    [("arguments", tool.signature.struct | UnsetType, UNSET)],
                    bases=(self._yours,),
                    tag_field="name",
                    tag=name,
                    kw_only=True,
                    # (Class attributes, not fields: what the reading was made with.)
                    namespace={"name": name, "tool": tool},
                )
            )
        decoder = self._decoder = _union_decoder(members)
        self._built = True
        return decoder

    @classmethod
    def of(cls, registry: Registry) -> TypedCalls:
        """The reader of ``registry``'s calls (one per registry)."""
        reader = _readers.get(registry)
        if reader is None:
            reader = _readers[registry] = cls(registry)
        return reader

    def read(self, raw: Raw) -> TypedCall | None:
        """``raw`` (a request's params, which the reading keeps as its ``raw``) read in one
        typed pass, or None: read it the general way, which answers every case this one
        declines exactly as always (its rules are the general reading's, and stricter: it
        never takes what that one refuses)."""
        decoder = self._decoder
        if decoder is None:
            if self._built:
                return None  # no tool is eligible
            decoder = self._build()
            if decoder is None:
                return None
        try:
            call = decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError):  # ValidationError included
            return None
        if self._tools.get(call.name) is not call.tool:
            self._stale()  # the registry changed without telling: rebuild next time
            return None
        call.raw = raw
        return call

    def pre_read(self, frame: bytes | bytearray | memoryview) -> PreRead | None:
        """A ``tools/call`` frame read whole in the tool's one typed pass, before any other
        decode of it: ``(envelope, call)``, the envelope's ``params`` a ``Raw`` view of the
        frame (no copy; what ``ctx.params`` will be) and ``call`` its reading. None: read the
        frame the general way (``decode_frame``), which answers every case this one declines,
        errors included, exactly as always.

        The envelope is read from the few bytes around ``params`` (``split_params``), not
        from them; this typed decode of ``params`` is the one pass over them, and proves the
        span it was given is exactly one JSON value.

        A batch (JSON-RPC 2.0 section 6) holding such a call among small items is read the
        same way (``split_batch_params``): ``(items, {index: (envelope, call)})``, the
        batch's items for the others, the call read here.
        """
        items: list[Raw] | None = None
        if frame[:1] == b"[":
            found = split_batch_params(frame)
            if found is None:
                return None
            items, index, envelope, span = found
        else:
            split = split_params(frame)
            if split is None:
                return None
            envelope, span = split
        if envelope.method != TOOLS_CALL:
            return None
        raw = Raw(span)
        call = self.read(raw)
        if call is None:
            return None
        envelope.params = raw
        return (envelope, call) if items is None else (items, {index: (envelope, call)})

    def for_request(self, ctx: RequestContext) -> TypedCall | None:
        """The reading of ``ctx.params`` for era selection and the handler: the one made
        before (``ctx.prepared``) when it is this reader's, of these very params and for the
        tool still registered under its name; else a fresh :meth:`read`, kept in
        ``ctx.prepared`` for whoever asks next. None: read the params the general way. Small
        params nobody read before are left to the general reading, which is cheaper for
        them (``benchmarks/README.md``, "Features and handlers")."""
        call = ctx.prepared
        if call is None:
            raw = ctx.params
            if raw is None or len(raw) <= ONE_PASS_OVER:
                return None
        else:
            raw = ctx.params
            if (
                isinstance(call, self._yours)
                and call.raw is raw
                and self._tools.get(call.name) is call.tool
            ):
                return call
            if raw is None:
                return None
        call = ctx.prepared = self.read(raw)
        return call


def _union_decoder(members: list[type]) -> msgspec.json.Decoder[TypedCall] | None:
    if not members:
        return None
    union: Any = members[0]
    for member in members[1:]:
        union = union | member
    decoder: msgspec.json.Decoder[TypedCall] = msgspec.json.Decoder(union)
    return decoder
