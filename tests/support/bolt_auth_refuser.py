"""A Bolt server that refuses every login, the way Neo4j answers a wrong password.

It stands in for Neo4j's authentication (FalkorDB, the Bolt server of the other tests, has
none), and speaks the real wire protocol to the official driver: the Bolt handshake (it
agrees to Bolt 5.4), chunked PackStream messages, ``SUCCESS`` to ``HELLO`` and ``FAILURE``
with ``Neo.ClientError.Security.Unauthorized`` to ``LOGON``, exactly as Neo4j 5 sends them.
It serves nothing else.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading

_MAGIC = b"\x60\x60\xb0\x17"
_HELLO, _GOODBYE, _RESET, _LOGON = 0x01, 0x02, 0x0F, 0x6A
_SUCCESS, _FAILURE = 0x70, 0x7F
UNAUTHORIZED = "Neo.ClientError.Security.Unauthorized"


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    if len(data) < 16:
        return bytes([0x80 + len(data)]) + data
    return b"\xd0" + bytes([len(data)]) + data


def _message(signature: int, fields: dict[str, str]) -> bytes:
    body = bytes([0xB1, signature, 0xA0 + len(fields)])
    for key, value in fields.items():
        body += _string(key) + _string(value)
    return struct.pack(">H", len(body)) + body + b"\x00\x00"


class BoltAuthRefuser:
    """Listen on 127.0.0.1 and refuse every ``LOGON``; ``uri`` is where to connect."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.uri = f"bolt://127.0.0.1:{self._listener.getsockname()[1]}"
        self.logons = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def close(self) -> None:
        self._listener.close()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _session(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            handshake = self._read(conn, 20)
            if handshake[:4] != _MAGIC:
                return
            conn.sendall(b"\x00\x00\x04\x05")  # Bolt 5.4
            while True:
                message = self._read_message(conn)
                if not message or len(message) < 2:
                    return
                signature = message[1]
                if signature == _HELLO:
                    reply = {"server": "Neo4j/5.26.0", "connection_id": "bolt-1"}
                    conn.sendall(_message(_SUCCESS, reply))
                elif signature == _LOGON:
                    self.logons += 1
                    conn.sendall(
                        _message(
                            _FAILURE,
                            {
                                "code": UNAUTHORIZED,
                                "message": "The client is unauthorized due to "
                                "authentication failure.",
                            },
                        )
                    )
                elif signature == _RESET:
                    conn.sendall(_message(_SUCCESS, {}))
                else:  # GOODBYE or anything after a refused login
                    return

    @staticmethod
    def _read(conn: socket.socket, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = conn.recv(size - len(data))
            if not chunk:
                return b""
            data += chunk
        return data

    def _read_message(self, conn: socket.socket) -> bytes:
        message = b""
        while True:
            header = self._read(conn, 2)
            if not header:
                return b""
            (size,) = struct.unpack(">H", header)
            if size == 0:
                if message:
                    return message
                continue  # a NOOP chunk
            message += self._read(conn, size)
