"""What loopback is, decided once: which bind addresses reach only this machine.

Every check that depends on it asks here: serving without authentication (loopback only),
the warning for plain HTTP beyond loopback, DNS-rebinding protection (on for every loopback
address bound), and a JWKS URL over plain ``http`` (loopback only).

Loopback is ``localhost``, the whole of ``127.0.0.0/8``, ``::1`` and IPv4-mapped
``::ffff:127.x.y.z``, decided on the parsed address, never on a prefix of the text: a host
named ``127.example.net`` is a name anyone can point anywhere, not loopback.
"""

from __future__ import annotations

import ipaddress

__all__ = ["host_names", "is_loopback", "normal_host"]


def normal_host(host: str) -> str:
    """A host as compared here: lower case, without IPv6 brackets or a trailing dot.

    Args:
        host: A host name or address, as given to ``--http`` or sent in a header.

    Returns:
        The normalised host (an IP address in its compressed form).
    """
    name = host.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


def is_loopback(host: str) -> bool:
    """Whether a bind address reaches only this machine.

    Args:
        host: The host to bind (or a URL's host).

    Returns:
        True for ``localhost``, ``127.0.0.0/8``, ``::1`` and ``::ffff:127.0.0.0/104``.
    """
    name = normal_host(host)
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def host_names(host: str) -> frozenset[str]:
    """The names a browser can use to reach a server bound to a loopback ``host``.

    A request whose ``Host`` (or ``Origin``) names anything else did not come from a page
    of this machine: it came through a name an outsider controls (DNS rebinding).

    Args:
        host: The loopback address bound.

    Returns:
        The normalised names: the address itself, and ``localhost`` where it resolves to
        that address (``127.0.0.1``, ``::1``); binding ``localhost`` allows both.

    Raises:
        ValueError: ``host`` is not loopback.
    """
    if not is_loopback(host):
        raise ValueError(f"{host!r} is not a loopback address")
    name = normal_host(host)
    if name == "localhost":
        return frozenset({"localhost", "127.0.0.1", "::1"})
    if name in ("127.0.0.1", "::1"):
        return frozenset({name, "localhost"})
    return frozenset({name})
