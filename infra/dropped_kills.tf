# A kill on_oom could not queue (publishing to the restart topic kept failing) is dropped once it is
# older than MAX_EVENT_AGE_SECONDS, instead of being retried for days (shared/app/intake.py). Its only trace
# is one ERROR audit entry, so nobody would hear of a notebook left dead: this metric counts those
# entries and the alert below tells the organizers, on the same channels as the dead-letter alert.
# tests/infra/test_dropped_kills.py checks the filter against the entry shared/app/intake.py writes.

resource "google_logging_metric" "dropped_kills" {
  name        = "${var.name_prefix}-dropped-kills"
  description = "OOM kills on_oom dropped: publishing to the restart topic failed and the event was older than MAX_EVENT_AGE_SECONDS."
  filter      = "resource.type=\"cloud_run_revision\" AND resource.labels.service_name=\"${google_cloudfunctions2_function.on_oom.name}\" AND severity=ERROR AND jsonPayload.audit=true AND jsonPayload.decision=\"dropped\""

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "notebook-medic OOM kills dropped"

    labels {
      key         = "instance"
      value_type  = "STRING"
      description = "The Workbench instance whose kill was dropped (empty for a kill no instance could be tied to)."
    }
  }

  label_extractors = {
    instance = "EXTRACT(jsonPayload.instance)"
  }
}

# A log-based metric is not at once visible to Cloud Monitoring: an alert policy created right after
# it fails with 404 "Cannot find metric(s) that match type" for minutes (terraform-provider-google
# issue 11102). Wait after the metric is created (and again whenever it is replaced), as Google's
# modules do with time_sleep.
resource "time_sleep" "dropped_kills_metric" {
  create_duration = "180s"

  triggers = {
    metric = google_logging_metric.dropped_kills.id
  }
}

resource "google_monitoring_alert_policy" "dropped_kills" {
  display_name = "notebook-medic: OOM kills dropped"
  combiner     = "OR"

  conditions {
    display_name = "on_oom dropped a kill it could not queue"

    condition_threshold {
      # The API demands a resource type for a log-based metric: the type of the entries it counts.
      filter          = "resource.type = \"cloud_run_revision\" AND metric.type = \"logging.googleapis.com/user/${google_logging_metric.dropped_kills.name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"

      aggregations {
        alignment_period   = "300s"
        per_series_aligner = "ALIGN_SUM"
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
      notebook-medic's on_oom read an OOM kill but could not put it on the restart topic until the event was
      older than ${var.max_event_age_seconds} s, and dropped it: the notebook (metric label `instance`) was
      neither restarted nor reported in Slack. Read the dropped kills and why publishing failed:

          gcloud logging read 'resource.type="cloud_run_revision" AND resource.labels.service_name="${google_cloudfunctions2_function.on_oom.name}" AND jsonPayload.decision="dropped"' --project ${var.project_id} --freshness=1d

      Check the notebook and restart it by hand if it is still down (`/restart-notebook NAME`), then fix
      publishing (the on_oom service account's roles/pubsub.publisher on the restart topic, the topic itself).
    EOT
  }

  alert_strategy {
    auto_close = "86400s"
  }

  depends_on = [time_sleep.dropped_kills_metric]
}
