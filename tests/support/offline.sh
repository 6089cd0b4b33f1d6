#!/bin/sh
# Run a command inside a network namespace that has only loopback: called as
# `unshare -n -- sh offline.sh CMD...` so every server a test starts is on 127.0.0.1 only.
ip link set lo up
exec "$@"
