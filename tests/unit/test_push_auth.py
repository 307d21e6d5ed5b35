"""The worker's own check of a push's token (shared/adapters/push_auth.py): its settings are required, and Google's
certificates are read once per half hour, not once per push, on the FakeClock. The refusals themselves are tested
over the wire (tests/integration/test_push_auth.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.adapters.clock import FakeClock
from shared.adapters.config import GOOGLE_CERTS_URL, ConfigError, Need, load_settings
from shared.adapters.push_auth import CERTS_KEPT_S, REFETCH_AFTER_S, PushAuth
from simulators.oidc import OidcIssuer

ACCOUNT = "notebook-medic-push@contest-prj.iam.gserviceaccount.com"
AUDIENCE = "https://notebook-medic-restart-worker-123456789012.us-central1.run.app"


@pytest.fixture(scope="module")
def issuer() -> Iterator[OidcIssuer]:
    running = OidcIssuer().start()
    yield running
    running.stop()


def test_the_audience_and_the_account_are_required() -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings({Need.PUSH}, {})
    assert "PUSH_SERVICE_ACCOUNT is required" in str(refused.value)
    assert "PUSH_AUDIENCE is required" in str(refused.value)
    with pytest.raises(ConfigError, match="PUSH_SERVICE_ACCOUNT='someone' is not an email"):
        load_settings({Need.PUSH}, {"PUSH_AUDIENCE": AUDIENCE, "PUSH_SERVICE_ACCOUNT": "someone"})
    with pytest.raises(ValueError, match="required"):
        PushAuth(audience="", service_account=ACCOUNT, certs_url=GOOGLE_CERTS_URL, clock=FakeClock())


def test_production_checks_against_googles_certificates() -> None:
    settings = load_settings({Need.PUSH}, {"PUSH_AUDIENCE": AUDIENCE, "PUSH_SERVICE_ACCOUNT": ACCOUNT})
    assert (settings.push_audience, settings.push_service_account) == (AUDIENCE, ACCOUNT)
    assert settings.push_certs_url == "https://www.googleapis.com/oauth2/v1/certs"


def test_certificates_are_read_once_per_half_hour_not_per_push(issuer: OidcIssuer) -> None:
    clock = FakeClock()
    door = PushAuth(audience=AUDIENCE, service_account=ACCOUNT, certs_url=issuer.certs_url, clock=clock)
    before = issuer.fetches
    for _ in range(20):
        assert door.refusal(issuer.signer(ACCOUNT, AUDIENCE)) is None
    assert issuer.fetches == before + 1
    clock.advance(CERTS_KEPT_S + 1)
    assert door.refusal(issuer.signer(ACCOUNT, AUDIENCE)) is None
    assert issuer.fetches == before + 2


def test_an_unknown_key_reads_the_certificates_again_at_most_once_a_minute(issuer: OidcIssuer) -> None:
    """Google rotates its keys: a token of a key not yet kept asks again, but a flood of them costs one fetch."""
    clock = FakeClock()
    door = PushAuth(audience=AUDIENCE, service_account=ACCOUNT, certs_url=issuer.certs_url, clock=clock)
    assert door.refusal(issuer.signer(ACCOUNT, AUDIENCE)) is None
    before = issuer.fetches
    stranger = OidcIssuer()
    for _ in range(10):
        refused = door.refusal(stranger.signer(ACCOUNT, AUDIENCE))
        assert refused is not None and refused.status == 401
    assert issuer.fetches == before
    clock.advance(REFETCH_AFTER_S + 1)
    assert door.refusal(stranger.signer(ACCOUNT, AUDIENCE)) is not None
    assert issuer.fetches == before + 1


def test_certificates_that_cannot_be_read_ask_for_a_redelivery() -> None:
    """503: Pub/Sub redelivers; the push is neither read nor lost."""
    door = PushAuth(audience=AUDIENCE, service_account=ACCOUNT, certs_url="http://127.0.0.1:9/certs",
                    clock=FakeClock())
    refused = door.refusal(OidcIssuer().signer(ACCOUNT, AUDIENCE))
    assert refused is not None and refused.status == 503
