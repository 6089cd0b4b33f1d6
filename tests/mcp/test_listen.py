"""The server's listening socket: every connection it accepts sends its writes at once.

Real: the package's ``Listener`` binds a real TCP socket on 127.0.0.1, asyncio accepts on it as
uvicorn does (``loop.create_server(sock=...)``), and a real client connects. Nothing is timed:
the test reads the accepted socket's own ``TCP_NODELAY`` option, which decides whether a
response's body waits for the client's delayed ACK of its headers (about 40 ms a request on a
kept-alive connection).
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from agentkernel.mcp._listen import Listener


def test_a_connection_the_listener_accepts_has_nagle_off() -> None:
    listener = Listener("127.0.0.1", 0, "/mcp")
    port = listener.sock.getsockname()[1]
    seen: list[int] = []

    class Recorder(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            sock = transport.get_extra_info("socket")
            seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    async def accept_one() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(Recorder, sock=listener.sock)
        async with server:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            for _ in range(100):
                if seen:
                    break
                await asyncio.sleep(0.01)
            writer.close()

    asyncio.run(accept_one())
    assert seen and seen[0] != 0
