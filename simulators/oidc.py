"""Google's ID-token issuer, locally: the RS256 key that signs a push's OIDC token, and the certificates that check it.

A push subscription with an ``oidc_token`` (service account, audience) makes Pub/Sub send
``Authorization: Bearer <JWT>`` with every push, signed by Google; the receiver checks it against Google's
certificates (https://www.googleapis.com/oauth2/v1/certs: ``{key id: x509 PEM}``). Source: Pub/Sub,
"Authentication for push subscriptions" (cloud.google.com/pubsub/docs/authenticate-push-subscriptions):
header ``{"alg": "RS256", "kid": …, "typ": "JWT"}``; claims ``aud`` (the subscription's audience, the push
endpoint when none is set), ``azp`` and ``sub`` (the account's unique id), ``email`` (the push service account),
``email_verified: true``, ``iat``, ``exp`` (an hour later: "tokens … may be up to one hour old"), ``iss``
``https://accounts.google.com``. docs/fidelity.md, "Issue 25".

This issuer makes a key of its own at start and serves its certificate at ``certs_url``: the local stack points
restart_worker's verifier there (PUSH_CERTS_URL), where production leaves Google's. Tests mint the tokens a
forger could (another audience, another account, expired, another key) with ``token``.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from google.auth import crypt, jwt

from simulators.http_json import send_json

__all__ = ["GOOGLE_ISSUER", "OidcIssuer"]

GOOGLE_ISSUER = "https://accounts.google.com"
TOKEN_LIFETIME_S = 3600  # Pub/Sub: a push's token may be up to one hour old


class OidcIssuer:
    """Signs Google-shaped ID tokens with a key made at start; serves its certificate as Google's v1 certs URL."""

    def __init__(self) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = self._key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption())
        public = self._key.public_key().public_bytes(serialization.Encoding.DER,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo)
        self.key_id = hashlib.sha1(public).hexdigest()  # 40 hex digits, as Google's key ids are
        self._signer = crypt.RSASigner.from_string(pem, self.key_id)  # type: ignore[no-untyped-call]
        self._certificate = _self_signed(self._key)
        self._server: ThreadingHTTPServer | None = None
        self.fetches = 0  # how many times the certificates were read: the verifier caches them

    @property
    def certs_url(self) -> str:
        assert self._server is not None, "start() first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/oauth2/v1/certs"

    def start(self) -> OidcIssuer:
        issuer = self
        body = json.dumps({self.key_id: self._certificate}).encode()

        class Certs(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.fetches += 1
                send_json(self, 200 if self.path == "/oauth2/v1/certs" else 404, None, raw=body,
                          headers={"Cache-Control": "public, max-age=21600"})  # Google's answer carries one too

            def log_message(self, *_args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Certs)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def token(self, email: str, audience: str, *, issued_at: float | None = None, lifetime_s: int = TOKEN_LIFETIME_S,
              **claims: Any) -> str:
        """A push's token: Pub/Sub's claims for this account and audience; `claims` override or add any of them."""
        iat = int(time.time() if issued_at is None else issued_at)
        account_id = str(int(hashlib.sha256(email.encode()).hexdigest()[:15], 16))  # a stable numeric unique id
        payload = {"aud": audience, "azp": account_id, "email": email, "email_verified": True, "sub": account_id,
                   "iat": iat, "exp": iat + lifetime_s, "iss": GOOGLE_ISSUER, **claims}
        signed: bytes = jwt.encode(self._signer, payload)  # type: ignore[no-untyped-call]
        return signed.decode("ascii")

    def signer(self, email: str, audience: str) -> str:
        """What a push subscription's hook calls for each push: the Authorization header's value."""
        return "Bearer " + self.token(email, audience)


def _self_signed(key: rsa.RSAPrivateKey) -> str:
    """An x509 certificate of the key's public half, in PEM: the form Google's v1 certs URL serves."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "notebook-medic local issuer")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1)).not_valid_after(now + timedelta(days=2))
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM).decode("ascii")
