#!/bin/sh
# MCP Inspector's command-line client (npm @modelcontextprotocol/inspector, --cli mode), for
# tests/mcp/test_auth_inspector.py: a second, independent client of the authenticated HTTP
# server. Installed under $AK_PREP_DIR/mcp-inspector from the npm registry; the test itself
# runs offline. Idempotent: does nothing when the pinned version is already there.
set -eu
: "${AK_PREP_DIR:?AK_PREP_DIR must name the prepare cache folder}"
version="0.21.2"
target="$AK_PREP_DIR/mcp-inspector"
bin="$target/node_modules/.bin/mcp-inspector"
if [ -x "$bin" ] && grep -q "\"version\": \"$version\"" \
    "$target/node_modules/@modelcontextprotocol/inspector/package.json" 2>/dev/null; then
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "mcp-inspector: npm is missing (apt-get install -y nodejs npm)" >&2
    exit 1
fi
mkdir -p "$target"
npm install --prefix "$target" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/inspector@$version"
test -x "$bin"
echo "mcp-inspector: installed $version"
