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
- a presigned (SigV4 query) URL is checked here as S3 checks it: past its
  X-Amz-Expires it is refused (403 AccessDenied, "Request has expired"),
  with a wrong signature too (403 SignatureDoesNotMatch); a good one is
  served (moto itself fails on one: it looks for an Authorization header);
- an object's error answers (404, 403) carry the bucket's CORS headers, as
  S3's do, so a page can read them (moto adds them to successes only).

Usage: cors_server.py -H 127.0.0.1 -p PORT (as moto_server).
"""
import os
import sys
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs, quote, unquote, urlparse
import hashlib
import hmac

os.environ["MOTO_DISABLE_GLOBAL_CORS"] = "true"

from moto.s3.exceptions import MissingBucket  # noqa: E402
from moto.iam.access_control import IAMUserAccessKey  # noqa: E402
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
    query = parse_qs(urlparse(full_url).query)
    if "X-Amz-Signature" in query:
        refused = _presigned_refusal(self, request, full_url, query)
        if refused:
            return 403, {"Content-Type": "application/xml"}, (
                "<?xml version='1.0' encoding='UTF-8'?><Error><Code>%s</Code><Message>%s</Message></Error>" % refused
            )
        # Checked: moto's own check wants an Authorization header.
        self._authenticate_and_authorize_s3_action = lambda *a, **k: None
    return _key_response(self, request, full_url)


def _presigned_refusal(self, request, full_url, query):
    """(code, message) if S3 would refuse this presigned GET, else None."""
    one = {k: v[0] for k, v in query.items()}
    signed_at = datetime.strptime(one.get("X-Amz-Date", ""), "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    if datetime.now(timezone.utc) > signed_at + timedelta(seconds=int(one.get("X-Amz-Expires", "0"))):
        return ("AccessDenied", "Request has expired")
    key_id, day, region, service, _ = one["X-Amz-Credential"].split("/")
    try:
        secret = IAMUserAccessKey(self.current_account, "aws", key_id, request.headers)._secret_access_key
    except Exception:
        return ("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
    enc = lambda v: quote(v, safe="-_.~")  # noqa: E731
    canonical_query = "&".join(
        f"{enc(k)}={enc(v)}" for k, v in sorted(one.items()) if k != "X-Amz-Signature"
    )
    names = one["X-Amz-SignedHeaders"].split(";")
    headers = "".join(f"{n}:{request.headers.get(n, '').strip()}\n" for n in names)
    path = quote(unquote(urlparse(full_url).path), safe="/-_.~")
    canonical = "\n".join(["GET", path, canonical_query, headers, ";".join(names), "UNSIGNED-PAYLOAD"])
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", one["X-Amz-Date"], scope, hashlib.sha256(canonical.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for part in (day, region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    want = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(want, one["X-Amz-Signature"]):
        return ("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided.")
    return None


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
