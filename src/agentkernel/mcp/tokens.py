"""Issue a bearer token: ``python -m agentkernel.mcp.tokens IDENTITY``.

Prints the new token (give it to the caller; it is shown once and kept nowhere) and the line
to append to the server's token file (``--auth-tokens FILE``), which holds only its hash::

    $ python -m agentkernel.mcp.tokens Support_Agent
    token: ak_3q2...
    line:  Support_Agent sha256:9f86d08...
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from agentkernel.errors import AKConfigError
from agentkernel.mcp._auth import issue_token


def main(argv: Sequence[str] | None = None) -> int:
    """Issue one token per identity named.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).

    Returns:
        0, or 2 when an identity cannot be one.
    """
    parser = argparse.ArgumentParser(
        prog="python -m agentkernel.mcp.tokens",
        description="Issue bearer tokens for agentkernel-kb serve --auth-tokens FILE.",
    )
    parser.add_argument("identities", nargs="+", metavar="IDENTITY", help="agent names")
    args = parser.parse_args(argv)
    try:
        issued = [issue_token(identity) for identity in args.identities]
    except AKConfigError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    for token, line in issued:
        sys.stdout.write(f"token: {token}\nline:  {line}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
