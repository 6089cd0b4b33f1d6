#!/usr/bin/env bash
# HAProxy for the replica tests (tests/mcp/test_replicas.py): Debian's `haproxy` package and the
# libraries it needs, unpacked under $AK_PREP_DIR/haproxy (no daemon installed, nothing started),
# with a wrapper at $AK_PREP_DIR/haproxy/haproxy that finds them. A `haproxy` already on PATH is
# used as it is. Idempotent: does nothing when the wrapper runs. The test itself runs offline.
set -euo pipefail
: "${AK_PREP_DIR:?AK_PREP_DIR must name the prepare cache folder}"
target="$AK_PREP_DIR/haproxy"
wrapper="$target/haproxy"
packages=(haproxy liblua5.3-0 libopentracing-c-wrapper0 libopentracing1)

if [ -x "$wrapper" ] && "$wrapper" -v >/dev/null 2>&1; then
    echo "haproxy: $("$wrapper" -v | head -1)"
    exit 0
fi
mkdir -p "$target"
if command -v haproxy >/dev/null 2>&1; then
    printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v haproxy)" >"$wrapper"
else
    downloads="$target/debs"
    rm -rf "$downloads" "$target/root"
    mkdir -p "$downloads"
    # apt-get download needs the package lists; refresh them once if they are missing (root)
    if ! (cd "$downloads" && apt-get download "${packages[@]}" >/dev/null 2>&1); then
        if [ "$(id -u)" != "0" ]; then
            echo "haproxy: cannot download ${packages[*]}: run 'apt-get update' as root" >&2
            exit 1
        fi
        apt-get update -qq
        (cd "$downloads" && apt-get download "${packages[@]}" >/dev/null 2>&1)
    fi
    for deb in "$downloads"/*.deb; do
        dpkg -x "$deb" "$target/root"
    done
    printf '#!/bin/sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec %s "$@"\n' \
        "$target/root/usr/lib/x86_64-linux-gnu:$target/root/usr/lib" \
        "$target/root/usr/sbin/haproxy" >"$wrapper"
fi
chmod +x "$wrapper"
"$wrapper" -v | head -1
