#!/usr/bin/env bash
# Headless Chromium for the bundle viewer test (tests/cli/test_view.py): Debian's `chromium`
# package, driven over its DevTools pipe (tests/support/chromium.py), so no browser download
# and no Python package are needed. Idempotent: does nothing when /usr/bin/chromium exists.
# Installing needs root (apt-get); the test itself runs offline.
set -euo pipefail
CHROMIUM="${AK_CHROMIUM:-/usr/bin/chromium}"

if [ -x "$CHROMIUM" ]; then
    echo "chromium: $CHROMIUM is ready"
    exit 0
fi
if [ "$(id -u)" != "0" ]; then
    echo "chromium: $CHROMIUM is missing and installing it needs root:" \
        "run 'apt-get install -y chromium' as root" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# the recommended packages bring the fonts the screenshots need
apt-get install -y -qq chromium
test -x "$CHROMIUM"
echo "chromium: installed $("$CHROMIUM" --version 2>/dev/null)"
