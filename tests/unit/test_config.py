"""Start-up configuration: one clear message listing every problem; secrets never in repr."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.adapters.config import ConfigError, Need, load_settings
from shared.core.policy import RestartPolicy

GOOD = {
    "GOOGLE_CLOUD_PROJECT": "contest-prj",
    "RESTART_TOPIC": "notebook-restarts",
    "SLACK_BOT_TOKEN": "xoxb-secret-token",
    "SLACK_ALERT_CHANNEL": "C0ALERTS",
    "SLACK_SIGNING_SECRET": "shhh-signing",
    "ORGANIZER_EMAILS": "Org@Example.com, boss@example.com",
    "WORKBENCH_ZONES": "asia-northeast1-a,us-central1-a",
    "PUSH_AUDIENCE": "https://notebook-medic-restart-worker-123456789012.us-central1.run.app",
    "PUSH_SERVICE_ACCOUNT": "notebook-medic-push@contest-prj.iam.gserviceaccount.com",
}


def test_defaults_and_topic_expansion() -> None:
    settings = load_settings(set(Need), GOOD)
    assert settings.restart_topic == "projects/contest-prj/topics/notebook-restarts"
    assert settings.organizer_emails == {"org@example.com", "boss@example.com"}
    assert settings.policy.restart_policy is RestartPolicy.WHEN_UNHEALTHY
    assert settings.policy.health_grace == timedelta(minutes=3)
    assert settings.workbench_zones == ("asia-northeast1-a", "us-central1-a")


def test_secrets_stay_out_of_repr() -> None:
    text = repr(load_settings(set(Need), GOOD))
    assert "xoxb-secret-token" not in text and "shhh-signing" not in text


def test_every_problem_is_listed_at_once() -> None:
    env = {
        "SLACK_BOT_TOKEN": "not-a-token",
        "RESTART_POLICY": "sometimes",
        "HEALTH_GRACE_SECONDS": "-3",
        "DISPLAY_TIMEZONE": "Mars/Olympus",
        "MESSAGE_LANGUAGE": "fr",
        "ORGANIZER_EMAILS": "nobody",
        "CRASHLOOP_LIMIT": "0",
    }
    with pytest.raises(ConfigError) as caught:
        load_settings(set(Need), env)
    message = str(caught.value)
    for name in (
        "GOOGLE_CLOUD_PROJECT is required",
        "RESTART_TOPIC is required",
        "SLACK_ALERT_CHANNEL is required",
        "SLACK_SIGNING_SECRET is required",
        "WORKBENCH_ZONES is required",
        "SLACK_BOT_TOKEN does not look like",
        "RESTART_POLICY",
        "HEALTH_GRACE_SECONDS",
        "DISPLAY_TIMEZONE",
        "MESSAGE_LANGUAGE",
        "ORGANIZER_EMAILS",
        "CRASHLOOP_LIMIT",
    ):
        assert name in message
    assert "not-a-token" not in message


def test_each_function_needs_only_its_own() -> None:
    settings = load_settings({Need.PUBLISH}, {"GOOGLE_CLOUD_PROJECT": "contest-prj", "RESTART_TOPIC": "t-1"})
    assert settings.slack_bot_token == ""
    assert load_settings({Need.WORKBENCH}, {}).workbench_api_endpoint == ""
    # Only slack_app reads the organizers: a look-alike among them stops it, and nothing else (on_oom gets the
    # same environment from Terraform, and must start whatever a typo there says).
    env = {"GOOGLE_CLOUD_PROJECT": "contest-prj", "RESTART_TOPIC": "t-1", "ORGANIZER_EMAILS": "k\u00e5te@example.com"}
    assert load_settings({Need.PUBLISH}, env).restart_topic.endswith("t-1")


@pytest.mark.parametrize(
    ("endpoint", "ok"),
    [("http://127.0.0.1:8085", True), ("https://notebooks.example/", True), ("grpc://127.0.0.1:8086", True),
     ("grpc://127.0.0.1", False), ("127.0.0.1:8086", False), ("ftp://x", False), ("http://x/v2?a=b", False)],
)
def test_workbench_endpoint_is_a_rest_base_url_or_a_grpc_address(endpoint: str, ok: bool) -> None:
    env = {"WORKBENCH_API_ENDPOINT": endpoint}
    if ok:
        assert load_settings({Need.WORKBENCH}, env).workbench_api_endpoint == endpoint.rstrip("/")
    else:
        with pytest.raises(ConfigError, match="WORKBENCH_API_ENDPOINT"):
            load_settings({Need.WORKBENCH}, env)


def test_knobs() -> None:
    env = {**GOOD, "RESTART_POLICY": "always", "DRY_RUN": "true", "CRASHLOOP_LIMIT": "5",
           "DISPLAY_TIMEZONE": "Asia/Tokyo", "MESSAGE_LANGUAGE": "ja", "OWNER_DM": "false"}
    settings = load_settings(set(Need), env)
    assert settings.policy.restart_policy is RestartPolicy.ALWAYS and settings.policy.dry_run
    assert settings.policy.crashloop_limit == 5 and not settings.owner_dm
    assert settings.tz.key == "Asia/Tokyo" and settings.message_language == "ja"


def test_machine_ladder_and_prices() -> None:
    prices = "e2-standard-2=0.067, e2-standard-4=0.134"
    env = {**GOOD, "MACHINE_LADDER": "e2-standard-2,e2-standard-4", "MACHINE_PRICES": prices}
    settings = load_settings(set(Need), env)
    assert settings.machine_ladder == ("e2-standard-2", "e2-standard-4")
    assert settings.machine_prices == {"e2-standard-2": 0.067, "e2-standard-4": 0.134}
    with pytest.raises(ConfigError, match=r"MACHINE_LADDER.*MACHINE_PRICES"):
        load_settings(set(Need), {**GOOD, "MACHINE_LADDER": "x,x", "MACHINE_PRICES": "e2-standard-2=cheap"})
    # A rung whose size is unknown could never be shown to be bigger: said at start, not silently never offered.
    with pytest.raises(ConfigError, match=r"MACHINE_LADDER: the memory or vCPUs of n1-highmem-32 are unknown"):
        load_settings(set(Need), {**GOOD, "MACHINE_LADDER": "e2-standard-4,n1-highmem-32,custom-16-262144"})
