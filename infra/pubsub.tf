# Pub/Sub: the OOM topic the log sink writes to (on_oom's trigger), and the restart topic every
# restart passes through (on_oom and the Slack function publish, ordered per instance; the worker
# receives it by push).

resource "google_pubsub_topic" "oom" {
  #checkov:skip=CKV_GCP_83:Google-managed encryption is enough for these messages (log lines and instance names); a CMEK key adds a KMS dependency and cost for no data that needs it.
  name                       = "${var.name_prefix}-oom"
  message_retention_duration = "86400s"

  depends_on = [google_project_service.apis]
}

resource "google_pubsub_topic" "restart" {
  #checkov:skip=CKV_GCP_83:Google-managed encryption is enough for restart requests (instance names, a requester's email, a Slack response URL).
  name = "${var.name_prefix}-restart"

  depends_on = [google_project_service.apis]
}

# Requests that exhausted their deliveries land here. A topic without a subscription drops what is
# published to it, so the pull subscription below keeps them (7 days) for an organizer to read.
resource "google_pubsub_topic" "dead_letter" {
  #checkov:skip=CKV_GCP_83:Google-managed encryption is enough for dead-lettered restart requests.
  name = "${var.name_prefix}-restart-dead-letter"

  depends_on = [google_project_service.apis]
}

# The push identity: Pub/Sub signs each push with an OIDC token of this account, and only this
# account may invoke the worker (functions.tf).
resource "google_service_account" "push" {
  account_id   = "${var.name_prefix}-push"
  display_name = "notebook-medic: Pub/Sub push to restart_worker"

  depends_on = [google_project_service.apis]
}

resource "google_pubsub_subscription" "restart_worker" {
  name  = "${var.name_prefix}-restart-worker"
  topic = google_pubsub_topic.restart.id

  # One request per instance at a time, in order: the worker reads the history labels it last wrote.
  enable_message_ordering = true
  # The worker may take its whole timeout (540 s); a push still running must not be redelivered.
  ack_deadline_seconds = local.push_ack_deadline
  # Requests older than MAX_EVENT_AGE_SECONDS are dropped by the worker anyway.
  message_retention_duration = "86400s"

  push_config {
    push_endpoint = google_cloudfunctions2_function.restart_worker.service_config[0].uri

    oidc_token {
      service_account_email = google_service_account.push.email
      audience              = local.worker_push_audience # the worker checks it too (PUSH_AUDIENCE)
    }
  }

  # A 503 from the worker (transient failure, or "wait for health") comes back with backoff.
  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.dead_letter.id
    max_delivery_attempts = var.dead_letter_max_delivery_attempts
  }

  # The default expiry deletes a subscription after 31 days without deliveries: between two
  # contests that would silently break the bot. Never expire.
  expiration_policy {
    ttl = ""
  }

  depends_on = [
    google_cloud_run_service_iam_member.worker_invoker,
    google_service_account_iam_member.pubsub_signs_push_tokens,
  ]
}

resource "google_pubsub_subscription" "dead_letter" {
  name                       = "${var.name_prefix}-restart-dead-letter"
  topic                      = google_pubsub_topic.dead_letter.id
  message_retention_duration = "604800s"
  ack_deadline_seconds       = 60

  expiration_policy {
    ttl = ""
  }
}

# --- what the Pub/Sub service agent needs --------------------------------------------------------
# Each grant waits until the agent exists and IAM knows it (service_agents.tf).
# Dead-lettering: publish to the dead-letter topic and acknowledge on the source subscription.
resource "google_pubsub_topic_iam_member" "dead_letter_publisher" {
  topic  = google_pubsub_topic.dead_letter.id
  role   = "roles/pubsub.publisher"
  member = local.pubsub_service_agent

  depends_on = [time_sleep.service_agents]
}

resource "google_pubsub_subscription_iam_member" "dead_letter_subscriber" {
  subscription = google_pubsub_subscription.restart_worker.id
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_service_agent

  depends_on = [time_sleep.service_agents]
}

# OIDC tokens for authenticated push (projects created before April 2021 need this explicitly),
# granted on the two push identities only, not project-wide.
resource "google_service_account_iam_member" "pubsub_signs_push_tokens" {
  service_account_id = google_service_account.push.name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = local.pubsub_service_agent

  depends_on = [time_sleep.service_agents]
}

resource "google_service_account_iam_member" "pubsub_signs_trigger_tokens" {
  service_account_id = google_service_account.trigger.name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = local.pubsub_service_agent

  depends_on = [time_sleep.service_agents]
}

# --- publishers -----------------------------------------------------------------------------------
resource "google_pubsub_topic_iam_member" "on_oom_publishes_restarts" {
  topic  = google_pubsub_topic.restart.id
  role   = "roles/pubsub.publisher"
  member = google_service_account.functions["on_oom"].member
}

resource "google_pubsub_topic_iam_member" "slack_app_publishes_restarts" {
  topic  = google_pubsub_topic.restart.id
  role   = "roles/pubsub.publisher"
  member = google_service_account.functions["slack_app"].member
}

# A waiting automatic incident re-publishes itself (its continuation, same ordering key) so that it never holds
# its instance's key for longer than one poll (shared/core/waiting.py). The restart topic only.
resource "google_pubsub_topic_iam_member" "restart_worker_publishes_restarts" {
  topic  = google_pubsub_topic.restart.id
  role   = "roles/pubsub.publisher"
  member = google_service_account.functions["restart_worker"].member
}
