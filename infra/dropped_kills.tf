# A kill on_oom cannot queue (publishing to the restart topic keeps failing, or Compute Engine cannot name its VM) is
# retried by Eventarc while it is young and dropped once it is older than MAX_EVENT_AGE_SECONDS, instead of being
# retried for days (shared/app/intake.py); nobody would hear of a notebook left dead. This alert tells the
# organizers while such kills wait, from Pub/Sub's own metric of the OOM topic: the age of its oldest message not
# yet acknowledged (on_oom acknowledges a kill once it is queued, refused, or dropped).
#
# Not a log-based metric on on_oom's "dropped" audit entries, as before issue 44: every notebook's service account may
# write any log entry in the project (roles/logging.logWriter), in on_oom's very words, and a log-based metric
# cannot check the entries' seal (shared/core/seal.py): anyone could page the organizers at will. A Pub/Sub metric
# is written by Google alone; only the kills that really wait raise it (docs/security.md, "Forged audit entries").
# tests/infra/test_dropped_kills.py checks the alert's filter, threshold and channels.

resource "google_monitoring_alert_policy" "dropped_kills" {
  display_name = "notebook-medic: OOM kills dropped"
  combiner     = "OR"

  conditions {
    display_name = "OOM kills waiting in ${google_pubsub_topic.oom.name} for half of MAX_EVENT_AGE_SECONDS"

    condition_threshold {
      filter          = "resource.type = \"pubsub_topic\" AND resource.labels.topic_id = \"${google_pubsub_topic.oom.name}\" AND metric.type = \"pubsub.googleapis.com/topic/oldest_unacked_message_age_by_region\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.max_event_age_seconds / 2
      duration        = "0s"

      aggregations {
        alignment_period   = "300s"
        per_series_aligner = "ALIGN_MAX"
      }

      trigger {
        count = 1
      }
    }
  }

  notification_channels = local.organizer_channels

  documentation {
    mime_type = "text/markdown"
    content   = <<-EOT
      notebook-medic's on_oom has read an OOM kill it could not put on the restart topic for over
      ${var.max_event_age_seconds / 2} s; at ${var.max_event_age_seconds} s it drops it, and the notebook is neither
      restarted nor reported in Slack. Read why in on_oom's log, and the kills it dropped (the bot's own entries carry
      a `seal`; `make report` counts only those):

          gcloud logging read 'resource.type="cloud_run_revision" AND resource.labels.service_name="${google_cloudfunctions2_function.on_oom.name}" AND severity>=WARNING' --project ${var.project_id} --freshness=1d

      Check the notebooks named there and restart them by hand if they are still down (`/restart-notebook NAME`),
      then fix publishing (the on_oom service account's roles/pubsub.publisher on the restart topic, the topic itself)
      or Compute Engine's reads.
    EOT
  }

  alert_strategy {
    auto_close = "86400s"
  }
}
