r"""Answers for JSON-RPC messages the SDK cannot read: an error response, never silence.

The SDK's transports parse each message strictly. A line that is not JSON, a message that is
not JSON-RPC, or text holding a lone surrogate (``"\ud800"``: valid JSON, but not Unicode, so
the strict parser refuses it) is dropped on stdio without a word, and a client waits forever
for its answer. This module, which does not import the SDK, decides what to answer instead:

- not JSON (or not UTF-8): a ``-32700`` parse error, ``id: null``;
- a ``tools/call`` whose arguments hold a lone surrogate: an ``isError`` result naming the
  argument, like every other invalid argument, so the model can correct itself;
- a lone surrogate anywhere else: a ``-32602`` invalid-params error with the request's id;
- anything else that is not a JSON-RPC message: a ``-32600`` invalid-request error.

A notification (no ``id``) is never answered, as JSON-RPC requires. Every quoted piece of
input goes through :func:`agentkernel.errors.echo`, so the answer is short and encodable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from agentkernel.errors import ECHO_LIMIT, echo

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

#: A ``\uD800``-``\uDFFF`` escape: the only way a surrogate reaches a JSON text that is UTF-8.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")

_NOTHING_RUN = "Nothing was run."
_LONG_NUMBER = (
    "a number in the message is too long to read (more than 4300 digits); a JSON-RPC id is a "
    "string or a number of at most 19 digits."
)
#: The largest id this server echoes: JSON-RPC ids are strings or (in practice) 64-bit integers.
_MAX_ID = 2**63 - 1


def bad_id(message: Any) -> dict[str, Any] | None:
    """The answer to a request whose ``id`` JSON-RPC does not allow, or ``None``.

    JSON-RPC 2.0: an id is a string, a number or null. An object, a list, a boolean, a
    fraction or an integer beyond 64 bits cannot be echoed back faithfully, so such a
    request is an Invalid Request, answered with ``id: null`` (the SDK would otherwise read
    it as a notification and never answer).

    Args:
        message: A parsed JSON-RPC message (or batch).

    Returns:
        The error to send back, or ``None`` when every id is acceptable.
    """
    items = message if isinstance(message, list) else [message]
    for item in items:
        if not isinstance(item, Mapping) or "id" not in item:
            continue
        ident = item["id"]
        if ident is None or isinstance(ident, str):
            continue
        if isinstance(ident, int) and not isinstance(ident, bool) and abs(ident) <= _MAX_ID:
            continue
        kinds = {dict: "an object", list: "a list", bool: "a boolean", float: "a fraction"}
        kind = kinds.get(type(ident), "a number too large")
        return _error(
            None,
            INVALID_REQUEST,
            f"Invalid Request: the id is {kind}; a JSON-RPC id is a string or an integer "
            f"(at most {_MAX_ID}). {_NOTHING_RUN}",
        )
    return None


def answer_unparsed(raw: str | bytes) -> dict[str, Any] | None:
    """The answer to a message the SDK could not parse, from its raw text.

    Args:
        raw: The message as received (one stdio line, or an HTTP body).

    Returns:
        The JSON-RPC message to send back, or ``None`` when none is due (a notification).
    """
    try:
        message = json.loads(raw)
    except RecursionError:
        return _error(
            None, PARSE_ERROR, f"Parse error: the JSON is nested too deeply. {_NOTHING_RUN}"
        )
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, or an integer too long
        if not isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
            return _error(None, INVALID_REQUEST, f"Invalid Request: {_LONG_NUMBER} {_NOTHING_RUN}")
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "the text is not UTF-8"
        where = (
            f" at line {exc.lineno} column {exc.colno}"
            if isinstance(exc, json.JSONDecodeError)
            else ""
        )
        return _error(None, PARSE_ERROR, f"Parse error: {reason}{where}. {_NOTHING_RUN}")
    return answer_invalid(message)


def answer_invalid(message: Any) -> dict[str, Any] | None:
    """The answer to a parsed message the SDK refused as JSON-RPC.

    Args:
        message: The message as ``json.loads`` read it.

    Returns:
        The JSON-RPC message to send back, or ``None`` when none is due (a notification).
    """
    if not isinstance(message, Mapping):
        return _error(
            None,
            INVALID_REQUEST,
            f"Invalid Request: a JSON-RPC message is a JSON object, got {type(message).__name__}. "
            + _NOTHING_RUN,
        )
    ident = message.get("id")
    if isinstance(ident, bool) or not isinstance(ident, str | int) or not _encodable(ident):
        ident = None
    method = message.get("method")
    if "id" not in message and isinstance(method, str):
        return None  # a notification: JSON-RPC forbids answering it, even with an error
    try:
        where = surrogate_at(message)
    except RecursionError:
        where = None
    if where is None:
        return _error(
            ident,
            INVALID_REQUEST,
            'Invalid Request: not a JSON-RPC 2.0 request (it needs "jsonrpc": "2.0", a '
            f'string "method" and an "id"). {_NOTHING_RUN}',
        )
    problem = (
        f"{where} is not valid Unicode text: it holds a lone surrogate (half of a UTF-16 "
        f"pair). Send UTF-8 text. {_NOTHING_RUN}"
    )
    params = message.get("params")
    tool = params.get("name") if isinstance(params, Mapping) else None
    if (
        method == "tools/call"
        and ident is not None
        and isinstance(tool, str)
        and _encodable(tool)
        and "params.arguments" in where
    ):
        text = f"Invalid arguments for {tool}: {problem}"
        return {
            "jsonrpc": "2.0",
            "id": ident,
            "result": {"content": [{"type": "text", "text": text}], "isError": True},
        }
    return _error(ident, INVALID_PARAMS, f"Invalid params: {problem}")


def surrogate_at(value: Any) -> str | None:
    """Find the first string (value or key) holding a lone surrogate.

    Args:
        value: Parsed JSON.

    Returns:
        Its dotted location (``params.arguments.query``, ``a key of params.arguments``),
        cut like any echoed input; ``None`` when there is none.
    """
    found = _find(value, "")
    if found is None or len(found) <= ECHO_LIMIT:
        return found
    return echo(found)


def _find(value: Any, where: str) -> str | None:
    if isinstance(value, str):
        return None if _encodable(value) else (where or "the message")
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and not _encodable(key):
                return f"a key of {where}" if where else "a key of the message"
            found = _find(item, f"{where}.{key}" if where else str(key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for position, item in enumerate(value):
            found = _find(item, f"{where}[{position}]")
            if found is not None:
                return found
    return None


def _encodable(value: str | int) -> bool:
    if not isinstance(value, str) or value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _error(ident: str | int | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}
