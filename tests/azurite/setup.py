"""Create a blob container in Azurite, signed with the emulator's
well-known account key (Shared Key). Azurite has no unsigned way to make one
and object_store does not create containers. Standard library only.

Usage: setup.py ENDPOINT CONTAINER   (ENDPOINT: http://127.0.0.1:PORT)
"""
import base64
import email.utils
import hashlib
import hmac
import sys
import urllib.request

endpoint, container = sys.argv[1], sys.argv[2]
account = "devstoreaccount1"
key = base64.b64decode(
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
date = email.utils.formatdate(usegmt=True)
version = "2021-08-06"
# Shared Key string to sign: verb, 11 standard headers (all empty here),
# the x-ms-* headers, then the resource (path-style: the account twice).
headers = f"x-ms-date:{date}\nx-ms-version:{version}\n"
resource = f"/{account}/{account}/{container}\nrestype:container"
to_sign = "PUT" + "\n" * 12 + headers + resource
signature = base64.b64encode(hmac.new(key, to_sign.encode(), hashlib.sha256).digest()).decode()
request = urllib.request.Request(
    f"{endpoint}/{account}/{container}?restype=container",
    method="PUT",
    headers={
        "x-ms-date": date,
        "x-ms-version": version,
        "Content-Length": "0",
        "Authorization": f"SharedKey {account}:{signature}",
    },
)
with urllib.request.urlopen(request) as response:
    assert response.status == 201, response.status
