"""TCP and Unix-domain socket listeners that hand each accepted stream to a handler."""

from __future__ import annotations

import os
import socket as _stdlib_socket
import stat

import trio

__all__ = ["open_unix_listener"]


async def open_unix_listener(path: str, *, backlog: int = 128) -> trio.SocketListener:
    """Bind a Unix stream socket at ``path``; a stale socket file there is replaced.

    Raises OSError (FileExistsError) when ``path`` exists and is not a socket, so a typo
    never deletes a regular file.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISSOCK(mode):
            raise FileExistsError(f"{path} exists and is not a socket")
        os.unlink(path)
    sock = trio.socket.socket(_stdlib_socket.AF_UNIX, _stdlib_socket.SOCK_STREAM)
    try:
        await sock.bind(path)
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    return trio.SocketListener(sock)
