"""moto_server for the browser tests: S3 with signatures checked, and CORS
as S3 does it.

Three differences from plain `moto_server`, all toward real S3:
- moto's global CORS headers are off (MOTO_DISABLE_GLOBAL_CORS), so only a
  bucket's own CORS rules let a page read it (a bucket without one fails in
  the browser as it does on AWS);
- a CORS preflight (OPTIONS) is answered from the bucket's rules without
  authentication: browsers never sign a preflight, S3 never asks them to,
  and moto 5 checks a signature on it (so any signed request from a page,
  which needs a preflight for its Authorization header, would fail);
- an object's error answers (404, 403) carry the bucket's CORS headers, as
  S3's do, so a page can read them (moto adds them to successes only).

Usage: cors_server.py -H 127.0.0.1 -p PORT (as moto_server).
"""
import os
import sys

os.environ["MOTO_DISABLE_GLOBAL_CORS"] = "true"

from moto.s3.exceptions import MissingBucket  # noqa: E402
from moto.s3.responses import S3Response  # noqa: E402


def _response_options(self, headers, bucket_name):
    try:
        bucket = self.backend.head_bucket(bucket_name)
    except MissingBucket:
        return 403, {}, ""
    self._set_cors_headers_options(headers, bucket)
    return 200, self.response_headers, ""


_key_response = S3Response._key_response


def _key_response_preflight_first(self, request, full_url):
    # moto refuses an unsigned request for a private object before it looks
    # at the method: a preflight must reach the CORS answer first.
    if request.method == "OPTIONS":
        return self._response_options(request.headers, self.parse_bucket_name_from_url(request, full_url))
    return _key_response(self, request, full_url)


_public_key_response = S3Response.key_response


def _key_response_with_cors(self, request, full_url, headers):
    status, response_headers, body = _public_key_response(self, request, full_url, headers)
    if request.method != "OPTIONS":
        for k, v in self._get_cors_headers_other().items():
            response_headers.setdefault(k, v)
    return status, response_headers, body


S3Response.key_response = _key_response_with_cors
S3Response._response_options = _response_options
S3Response._key_response = _key_response_preflight_first

from moto.server import main  # noqa: E402

sys.exit(main())
