"""``python -m agentkernel.knowledgestore DIR``: the older name of ``agentkernel-kb store serve``.

It is that command, not a copy of it: the same options (``--sqlite``, ``--writable``,
``--interactive``, ``--http HOST:PORT`` and the access options), the same default (read-only
unless ``--writable``), the same startup line on stderr (name, transport and URL, mode) and the
same exit codes.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from agentkernel.cli.command import main as cli_main


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a knowledge store as ``agentkernel-kb store serve`` does.

    Args:
        argv: The arguments after the module name (``sys.argv[1:]`` when ``None``).

    Returns:
        The exit status of ``agentkernel-kb store serve``.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    return cli_main(["store", "serve", *args])


if __name__ == "__main__":
    raise SystemExit(main())
