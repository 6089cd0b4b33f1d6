"""A moto S3 server on 127.0.0.1 whose bucket is filled in-process before it serves.

Uploading 10,001 objects over HTTP to moto takes minutes (about 25 ms per PUT); putting them
straight into the server's own backend takes a second, and what the server then serves over
the S3 API (keys, bodies, ETags, listings) is the same. Run by ``_s3.moto_server``:

    python bench/_moto_seeded.py PORT BUNDLE_DIR BUCKET PREFIX

It prints ``ready <objects>`` once serving, and stops when its standard input closes.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> None:
    port, bundle, bucket, prefix = int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends
    from moto.server import ThreadedMotoServer

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    backend.create_bucket(bucket, "us-east-1")
    count = 0
    for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
        key = f"{prefix}/{path.relative_to(bundle).as_posix()}"
        backend.put_object(bucket, key, path.read_bytes())
        count += 1
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    print(f"ready {count}", flush=True)
    try:
        sys.stdin.read()  # until the bench closes our stdin (or dies)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
