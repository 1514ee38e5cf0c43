"""The core: the connection supervisor, the one request engine, the dispatcher, limits.

The wire rules these drive (envelope, error codes, versions, the lifecycle) are
``runtime.protocol``'s.
"""

from ._channel import MessageChannel, Outgoing
from ._connection import Connection
from ._context import Peer, RequestContext
from ._dispatch import BatchPolicy, Dispatcher, Handler, LoggedDispatcher, NotificationHandler
from ._limits import Limits
from ._session import Session
from ._single import dispatch_single

__all__ = [
    "BatchPolicy",
    "Connection",
    "Dispatcher",
    "Handler",
    "Limits",
    "LoggedDispatcher",
    "MessageChannel",
    "NotificationHandler",
    "Outgoing",
    "Peer",
    "RequestContext",
    "Session",
    "dispatch_single",
]
