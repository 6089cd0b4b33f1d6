#!/bin/sh
# A client-only virtualenv on the mcp 1.x line (the line crewai pins, mcp<2), so
# tests/mcp/test_cross_line.py can check that such a client talks to our server.
# Idempotent: does nothing when the venv already holds an mcp 1.x.
set -eu
: "${AK_PREP_DIR:?AK_PREP_DIR must name the prepare cache folder}"
venv="$AK_PREP_DIR/mcp1-client"
check='import importlib.metadata as m, sys; sys.exit(not m.version("mcp").startswith("1."))'
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" 2>/dev/null; then
    exit 0
fi
rm -rf "$venv"
python3.11 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "mcp>=1.30,<2"
"$venv/bin/python" -c "$check"
