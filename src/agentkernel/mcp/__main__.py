"""``python -m agentkernel.mcp``: serve knowledge bases over MCP (see ``_cli``)."""

from agentkernel.mcp._cli import main

if __name__ == "__main__":
    raise SystemExit(main())
