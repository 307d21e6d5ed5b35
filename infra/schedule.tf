# The contest's schedule (issue 44 item 3): its start all, stop warning and stop all arrive on a topic of their own,
# which the worker takes schedule messages from and from nowhere else (SCHEDULE_SUBSCRIPTION,
# shared/core/schedule_source.py). A schedule message names no requester and starts or stops every notebook, so who
# may publish it is the whole check: this module grants no one publish on the schedule topic; infra/contest's
# schedule.tf grants Cloud Scheduler's service agent alone (roles/pubsub.publisher on this topic), when the contest
# sets a schedule. The restart topic's publishers (on_oom, slack_app, the worker, health_sweep) cannot publish here,
# and a schedule message on the restart subscription is refused with its reason in the log.
#
# Which subscription a push came on is in the push body (`subscription`), written by Pub/Sub, not the publisher, in
# a push whose OIDC token the worker checks first (push_auth.py). A MAC over the message was weighed instead: a
# Scheduler job publishes one fixed body, so its MAC would be a password kept in the job (cloudscheduler.jobs.get)
# and in Terraform's state, good for every replay of that body (docs/security.md, "The contest's schedule").

locals {
  schedule_subscription_name = "${var.name_prefix}-schedule-worker"
  # The worker's SCHEDULE_SUBSCRIPTION (locals.tf), as the push body names it; not the resource's id, which would
  # make a cycle (the subscription pushes to the worker, whose environment would name the subscription).
  schedule_subscription = "projects/${var.project_id}/subscriptions/${local.schedule_subscription_name}"
}

resource "google_pubsub_topic" "schedule" {
  #checkov:skip=CKV_GCP_83:Google-managed encryption is enough for a schedule message (an action, a time, the contest's name).
  name = "${var.name_prefix}-schedule"

  # The worker acts on a schedule message within an hour of its time (fleet_ops.STALE_AFTER): keeping it longer is waste.
  message_retention_duration = "3600s"

  depends_on = [google_project_service.apis]
}

resource "google_pubsub_subscription" "schedule_worker" {
  name  = local.schedule_subscription_name
  topic = google_pubsub_topic.schedule.id

  # As the restart subscription, read from it (one place): a bulk run may take the worker's whole timeout and must not
  # be pushed twice; the same endpoint, push account and audience (the worker checks the token before the body); 503s
  # back off the same way.
  ack_deadline_seconds       = google_pubsub_subscription.restart_worker.ack_deadline_seconds
  message_retention_duration = "3600s"

  dynamic "push_config" {
    for_each = google_pubsub_subscription.restart_worker.push_config
    content {
      push_endpoint = push_config.value.push_endpoint
      oidc_token {
        service_account_email = push_config.value.oidc_token[0].service_account_email
        audience              = push_config.value.oidc_token[0].audience
      }
    }
  }

  dynamic "retry_policy" {
    for_each = google_pubsub_subscription.restart_worker.retry_policy
    content {
      minimum_backoff = retry_policy.value.minimum_backoff
      maximum_backoff = retry_policy.value.maximum_backoff
    }
  }

  # A subscription idle for 31 days is deleted by default; a contest's schedule fires a few times a year.
  expiration_policy {
    ttl = ""
  }
}
