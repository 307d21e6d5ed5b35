"""The restart path's Pub/Sub settings: ordered, authenticated push, a deadline that fits the worker,
bounded deliveries into a dead-letter topic that keeps what it gets and alerts the organizers."""

from __future__ import annotations

import re

from tests.infra import hcl

BOT = hcl.load_module(hcl.INFRA)
SUB = BOT.resource("google_pubsub_subscription", "restart_worker")


def test_push_subscription_is_ordered_and_authenticated() -> None:
    assert SUB["topic"] == "${google_pubsub_topic.restart.id}"
    assert SUB["enable_message_ordering"] is True
    push = SUB["push_config"][0]
    assert push["push_endpoint"] == "${google_cloudfunctions2_function.restart_worker.service_config[0].uri}"
    token = push["oidc_token"][0]
    assert token["service_account_email"] == "${google_service_account.push.email}"
    # The worker's run.app URL, which the worker is told too (PUSH_AUDIENCE) and checks itself (issue 25).
    assert token["audience"] == "${local.worker_push_audience}"
    assert BOT.locals["worker_push_audience"] == (
        '"https://${var.name_prefix}-restart-worker-${data.google_project.this.number}.${var.region}.run.app"')
    environment = hcl.expression(BOT.locals["common_environment"]) or ""
    assert "PUSH_AUDIENCE = local.worker_push_audience" in environment
    assert "PUSH_SERVICE_ACCOUNT = google_service_account.push.email" in environment


def test_ack_deadline_outlasts_the_worker() -> None:
    assert SUB["ack_deadline_seconds"] == "${local.push_ack_deadline}"
    assert BOT.locals["push_ack_deadline"] > BOT.locals["worker_timeout_seconds"]


def test_redelivery_backs_off_and_ends_in_the_dead_letter_topic() -> None:
    retry = SUB["retry_policy"][0]
    assert hcl.literal(retry["minimum_backoff"]) == "10s"
    assert hcl.literal(retry["maximum_backoff"]) == "600s"
    dead = SUB["dead_letter_policy"][0]
    assert dead["dead_letter_topic"] == "${google_pubsub_topic.dead_letter.id}"
    assert dead["max_delivery_attempts"] == "${var.dead_letter_max_delivery_attempts}"
    kept = BOT.resource("google_pubsub_subscription", "dead_letter")
    assert kept["topic"] == "${google_pubsub_topic.dead_letter.id}"
    assert "push_config" not in kept, "dead letters wait for a person; they are not pushed back to the worker"


def test_an_event_ages_out_with_an_alert_before_pubsub_forgets_it() -> None:
    """Past MAX_EVENT_AGE an event is dropped with an ERROR, after the dropped-kills alert has fired; an event the
    restart subscription (or Eventarc, also 24 h) discards first would vanish with no alert at all."""
    condition = BOT.variables["max_event_age_seconds"]["validation"][0]["condition"]
    longest_age = int(re.search(r"max_event_age_seconds <= (\d+)", condition).group(1))  # type: ignore[union-attr]
    retention = int(hcl.literal(SUB["message_retention_duration"]).removesuffix("s"))
    longest_backoff = int(hcl.literal(SUB["retry_policy"][0]["maximum_backoff"]).removesuffix("s"))
    assert retention <= 86400, "Eventarc keeps an undelivered kill for 24 h whatever this says"
    assert longest_age + 2 * longest_backoff <= retention


def test_subscriptions_never_expire() -> None:
    for name, body in BOT.of_type("google_pubsub_subscription").items():
        assert body["expiration_policy"][0]["ttl"] == '""', f"{name} would be deleted after 31 idle days"


def test_pubsub_service_agent_can_dead_letter_and_sign_tokens() -> None:
    agent = "${local.pubsub_service_agent}"
    grants = {
        (rtype, body.get("topic") or body.get("subscription") or body.get("service_account_id"), body["role"])
        for (rtype, _), body in BOT.resources.items()
        if rtype.endswith("_iam_member") and body.get("member") == agent
    }
    assert grants == {
        ("google_pubsub_topic_iam_member", "${google_pubsub_topic.dead_letter.id}", '"roles/pubsub.publisher"'),
        ("google_pubsub_subscription_iam_member", "${google_pubsub_subscription.restart_worker.id}",
         '"roles/pubsub.subscriber"'),
        ("google_service_account_iam_member", "${google_service_account.push.name}",
         '"roles/iam.serviceAccountTokenCreator"'),
        ("google_service_account_iam_member", "${google_service_account.trigger.name}",
         '"roles/iam.serviceAccountTokenCreator"'),
    }


def test_dead_letters_alert_the_organizers() -> None:
    policy = BOT.resource("google_monitoring_alert_policy", "dead_letters")
    condition = policy["conditions"][0]["condition_threshold"][0]
    assert "${google_pubsub_subscription.dead_letter.name}" in condition["filter"]
    assert "subscription/num_undelivered_messages" in condition["filter"]
    assert policy["notification_channels"] == "${local.organizer_channels}"
    assert "google_monitoring_notification_channel.organizers" in BOT.locals["organizer_channels"]


def test_on_oom_trigger_retries_and_reads_the_oom_topic() -> None:
    trigger = BOT.resource("google_cloudfunctions2_function", "on_oom")["event_trigger"][0]
    assert hcl.literal(trigger["event_type"]) == "google.cloud.pubsub.topic.v1.messagePublished"
    assert trigger["pubsub_topic"] == "${google_pubsub_topic.oom.id}"
    assert hcl.literal(trigger["retry_policy"]) == "RETRY_POLICY_RETRY"


def test_slack_function_stays_warm_and_answers_fast() -> None:
    service = BOT.resource("google_cloudfunctions2_function", "slack_app")["service_config"][0]
    assert service["min_instance_count"] == "${var.slack_min_instances}"
    assert BOT.variables["slack_min_instances"]["default"] == 1
    assert service["timeout_seconds"] == 60


def test_memory_alerts_reach_on_memory_alert() -> None:
    channel = BOT.resource("google_monitoring_notification_channel", "memory_alerts")
    assert hcl.literal(channel["type"]) == "pubsub"
    assert channel["labels"]["topic"] == "${google_pubsub_topic.memory_alerts.id}"
    policy = BOT.resource("google_monitoring_alert_policy", "memory_pressure")
    assert policy["notification_channels"] == ["${google_monitoring_notification_channel.memory_alerts.id}"]
    assert hcl.literal(BOT.locals["memory_metric"]) == "agent.googleapis.com/memory/percent_used"
    assert 'metric.type = \\"${local.memory_metric}\\"' in policy["conditions"][0]["condition_threshold"][0]["filter"]
    publisher = BOT.resource("google_pubsub_topic_iam_member", "monitoring_publishes_memory_alerts")
    assert publisher["topic"] == "${google_pubsub_topic.memory_alerts.id}"
    assert publisher["member"] == '${local.service_agents["monitoring.googleapis.com"]}'
    assert "gcp-sa-monitoring-notification.iam.gserviceaccount.com" in BOT.locals["service_agents"][
        '"monitoring.googleapis.com"']
    trigger = BOT.resource("google_cloudfunctions2_function", "on_memory_alert")["event_trigger"][0]
    assert trigger["pubsub_topic"] == "${google_pubsub_topic.memory_alerts.id}"
    assert hcl.literal(trigger["event_type"]) == "google.cloud.pubsub.topic.v1.messagePublished"


def test_disk_alerts_reach_on_memory_alert_on_the_persistent_disks() -> None:
    """Issue 43: the disk policy notifies the memory alert's channel (one reader of Monitoring's notifications),
    on the Ops Agent's disk metric, state used, the persistent disks' devices only (no loop devices)."""
    import re  # noqa: PLC0415

    policy = BOT.resource("google_monitoring_alert_policy", "disk_filling")
    assert policy["notification_channels"] == ["${google_monitoring_notification_channel.memory_alerts.id}"]
    assert hcl.literal(BOT.locals["disk_metric"]) == "agent.googleapis.com/disk/percent_used"
    condition = policy["conditions"][0]["condition_threshold"][0]
    assert 'metric.type = \\"${local.disk_metric}\\"' in condition["filter"]
    assert 'metric.labels.state = \\"used\\"' in condition["filter"]
    assert condition["threshold_value"] == "${var.disk_alert_percent}"
    assert BOT.variables["disk_alert_percent"]["default"] == 90
    devices = re.compile(hcl.literal(BOT.locals["disk_devices"]))
    for kept in ("/dev/sda1", "/dev/sdb", "/dev/nvme0n1p1", "/dev/nvme0n2"):
        assert devices.fullmatch(kept), kept
    for left in ("/dev/loop3", "tmpfs", "overlay", "/dev/root"):
        assert not devices.fullmatch(left), left


def test_gpu_memory_alerts_reach_on_memory_alert_as_a_ratio_per_gpu() -> None:
    """Issue 47: the GPU policy notifies the memory alert's channel, on the Ops Agent's NVML metric: used over used +
    free, both reduced alike per VM and GPU (a ratio's two sides must have the same labels), the VM's name kept for
    the notification; its threshold the variable's percent as the fraction the ratio is."""
    policy = BOT.resource("google_monitoring_alert_policy", "gpu_memory_filling")
    assert policy["notification_channels"] == ["${google_monitoring_notification_channel.memory_alerts.id}"]
    gpu_locals = BOT.locals
    assert hcl.literal(gpu_locals["gpu_metric"]) == "agent.googleapis.com/gpu/memory/bytes_used"
    condition = policy["conditions"][0]["condition_threshold"][0]
    assert 'metric.type = \\"${local.gpu_metric}\\"' in condition["filter"]
    assert 'metric.labels.memory_state = \\"used\\"' in condition["filter"]
    assert 'metric.type = \\"${local.gpu_metric}\\"' in condition["denominator_filter"]
    assert "memory_state" not in condition["denominator_filter"]  # used and free: the GPU's whole memory
    assert condition["aggregations"] == condition["denominator_aggregations"]
    assert condition["aggregations"][0]["group_by_fields"] == "${local.gpu_group_by}"
    assert condition["threshold_value"] == "${var.gpu_alert_percent / 100}"
    assert BOT.variables["gpu_alert_percent"]["default"] == 90
