"""``python -m agentkernel.mcp``: serve knowledge bases over MCP.

An entry point (nothing imports it): the command line lives with the other commands, in
:mod:`agentkernel.cli.serving`.
"""

from agentkernel.cli.serving import main

if __name__ == "__main__":
    raise SystemExit(main())
