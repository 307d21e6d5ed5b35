"""The check of the OIDC token Pub/Sub signs for every push to restart_worker: who sent it, and for whom.

Cloud Run's IAM already lets only the push service account invoke the worker; this is the worker's own check,
so that a mistaken invoker grant or an ingress change lets no one else's request act. What Pub/Sub sends and
what a receiver checks (cloud.google.com/pubsub/docs/authenticate-push-subscriptions): the header
``Authorization: Bearer <JWT>``, an RS256 token Google signs, whose ``aud`` is the subscription's audience,
``email`` the push service account with ``email_verified`` true, ``iss`` ``accounts.google.com`` or
``https://accounts.google.com``; checked with google-auth's ``id_token.verify_token`` against Google's certificates
(PUSH_CERTS_URL points elsewhere only in the local stack: simulators/oidc.py). docs/security.md, "Pushes".
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import google.auth.exceptions
import google.auth.transport
import google.auth.transport.requests
from google.oauth2 import id_token

from shared.adapters.clock import Clock

log = logging.getLogger(__name__)

GOOGLE_ISSUERS = frozenset({"accounts.google.com", "https://accounts.google.com"})
CERTS_KEPT_S = 1800.0  # Google's certificates are kept this long; Google rotates its keys over days
REFETCH_AFTER_S = 60.0  # a token signed by a key not yet known fetches the certificates again, at most this often
CLOCK_SKEW_S = 10  # between Google's clock and this instance's, for iat and exp
CERTS_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Refusal:
    """Why a push is not acted on, and the HTTP status it gets: 401 no or bad token, 403 someone else's, 503 the
    certificates could not be read (Pub/Sub redelivers: any status but 102/200/201/202/204 is a nack)."""

    status: int
    reason: str


class _KeptCerts(google.auth.transport.Request):
    """A google.auth transport Request that keeps the certificates' answer, so a push costs no fetch."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._request = google.auth.transport.requests.Request()
        self._kept: dict[str, tuple[float, Any]] = {}

    def __call__(self, url: str, method: str = "GET", body: Any = None, headers: Any = None,
                 timeout: Any = None, **kwargs: Any) -> Any:
        now = self._clock.monotonic()
        kept = self._kept.get(url)
        if method == "GET" and kept is not None and now - kept[0] < CERTS_KEPT_S:
            return kept[1]
        response = self._request(url, method=method, body=body, headers=headers, timeout=CERTS_TIMEOUT_S, **kwargs)
        if method == "GET" and response.status == 200:
            self._kept[url] = (now, response)
        return response

    def forget(self, url: str) -> bool:
        """Drop a kept answer older than REFETCH_AFTER_S; True when one was dropped (then ask again)."""
        kept = self._kept.get(url)
        if kept is None or self._clock.monotonic() - kept[0] < REFETCH_AFTER_S:
            return False
        del self._kept[url]
        return True


class PushAuth:
    """restart_worker's door: a push is read only when its token is Google's, for this audience, from this account."""

    def __init__(self, *, audience: str, service_account: str, certs_url: str, clock: Clock) -> None:
        if not audience or not service_account:
            raise ValueError("the push audience and service account are required: nothing is read without them")
        self.audience = audience
        self.service_account = service_account
        self.certs_url = certs_url
        self._certs = _KeptCerts(clock)

    def refusal(self, authorization: str | None) -> Refusal | None:
        """None when the push may be read; otherwise why not (logged here, once per push)."""
        refused = self._check(authorization or "")
        if refused is not None:
            log.log(logging.ERROR if refused.status == 503 else logging.WARNING, "push refused: %s", refused.reason,
                    extra={"json_fields": {"decision": "push refused", "status": refused.status}})
        return refused

    def _check(self, authorization: str) -> Refusal | None:
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return Refusal(401, "no bearer token")
        try:
            claims = self._verify(token.strip())
        except google.auth.exceptions.TransportError as exc:
            return Refusal(503, f"Google's certificates could not be read ({type(exc).__name__})")
        except (ValueError, google.auth.exceptions.GoogleAuthError) as exc:
            return Refusal(401, f"the token does not hold: {str(exc)[:160]}")
        return _claims_refusal(claims, self.service_account)

    def _verify(self, token: str) -> Any:
        try:
            return id_token.verify_token(token, self._certs, audience=self.audience, certs_url=self.certs_url,
                                         clock_skew_in_seconds=CLOCK_SKEW_S)
        except ValueError as exc:
            if "not found" not in str(exc) or not self._certs.forget(self.certs_url):
                raise
        # Signed by a key the kept certificates don't list: Google may have rotated them; ask once more.
        return id_token.verify_token(token, self._certs, audience=self.audience, certs_url=self.certs_url,
                                     clock_skew_in_seconds=CLOCK_SKEW_S)


def _claims_refusal(claims: Any, service_account: str) -> Refusal | None:
    """The claims verify_token leaves to the receiver: the issuer, and the account with its verified email."""
    if not isinstance(claims, dict) or claims.get("iss") not in GOOGLE_ISSUERS:
        return Refusal(401, "the token's issuer is not Google")
    email = claims.get("email")
    if email != service_account or claims.get("email_verified") is not True:
        shown = email[:80] if isinstance(email, str) else "no email"
        return Refusal(403, f"the token is {shown}'s, not the push service account's")
    return None
