"""Seed roc-validator's HTTP cache with the RO-Crate 1.1 context that the pinned ``rocrate``
package ships, so that the validator runs offline (``--offline --cache-path``).

Run by install/bootstrap.sh with the validator's own interpreter, at install time:

  python seed_context.py CACHE_PREFIX SHA256

The context file (``rocrate/data/ro-crate.jsonld`` of rocrate 0.15.1) is checked against SHA256
before it is stored; the cache is written through the validator's own session (its key depends on
the session's settings), under a new name, then renamed into place.
"""

from __future__ import annotations

import datetime
import hashlib
import io
import os
import sys
from pathlib import Path

import requests
import rocrate
import urllib3
from rocrate_validator.utils.http import HttpRequester

CONTEXT_URL = "https://w3id.org/ro/crate/1.1/context"
CONTEXT_FILE = Path(rocrate.__file__).parent / "data" / "ro-crate.jsonld"


def main(prefix: str, sha256: str) -> int:
    body = CONTEXT_FILE.read_bytes()
    got = hashlib.sha256(body).hexdigest()
    if got != sha256:
        print(f"seed_context: {CONTEXT_FILE} has sha256 {got}, not the pinned {sha256}: "
              "is install/roc-validator/requirements.lock's rocrate the one pinned?", file=sys.stderr)
        return 1
    final = Path(prefix + ".sqlite")
    tmp_prefix = prefix + "-tmp"
    Path(tmp_prefix + ".sqlite").unlink(missing_ok=True)
    requester = HttpRequester(cache_max_age=-1, cache_path=tmp_prefix)
    response = requests.Response()
    response.status_code, response.reason, response.url = 200, "OK", CONTEXT_URL
    response._content = body
    response.raw = urllib3.HTTPResponse(body=io.BytesIO(body), status=200, preload_content=False,
                                        request_url=CONTEXT_URL)
    response.encoding = "utf-8"
    response.headers["Content-Type"] = "application/ld+json"
    response.elapsed = datetime.timedelta(0)
    response.request = requests.Request("GET", CONTEXT_URL).prepare()
    requester.session.cache.save_response(response)
    if not requester.has_cached(CONTEXT_URL):
        print(f"seed_context: the validator's cache at {tmp_prefix}.sqlite does not answer {CONTEXT_URL}", file=sys.stderr)
        return 1
    requester.session.close()
    os.replace(tmp_prefix + ".sqlite", final)
    print(final)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
