# When a restart request exhausts its deliveries it is moved to the dead-letter topic: somebody's
# notebook was not restarted and nobody was told by the bot itself. This alert tells the organizers
# (by email, plus any channel in extra_notification_channels) as long as such messages are waiting.
#
# Why an alert and not a second push subscription to the worker: the worker would treat the
# dead-lettered request as a new one and try again, which is what already failed 20 times.

resource "google_monitoring_notification_channel" "organizers" {
  for_each = toset(var.organizer_emails)

  display_name = "notebook-medic organizer ${each.value}"
  type         = "email"
  labels = {
    email_address = each.value
  }

  depends_on = [google_project_service.apis]
}

# Where every alert meant for the organizers goes: dead letters, dropped kills, a notebook that stopped
# reporting memory.
locals {
  organizer_channels = concat(
    [for channel in google_monitoring_notification_channel.organizers : channel.id],
    var.extra_notification_channels,
  )
}

resource "google_monitoring_alert_policy" "dead_letters" {
  display_name = "notebook-medic: restart requests dead-lettered"
  combiner     = "OR"

  conditions {
    display_name = "Undelivered restart requests in ${google_pubsub_subscription.dead_letter.name}"

    condition_threshold {
      filter          = "resource.type = \"pubsub_subscription\" AND resource.labels.subscription_id = \"${google_pubsub_subscription.dead_letter.name}\" AND metric.type = \"pubsub.googleapis.com/subscription/num_undelivered_messages\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
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
      A restart request for a Workbench instance failed ${var.dead_letter_max_delivery_attempts} deliveries to
      notebook-medic's restart worker and was set aside. Read it (the instance is in the `instance` attribute):

          gcloud pubsub subscriptions pull ${google_pubsub_subscription.dead_letter.name} --project ${var.project_id} --limit 10

      Check the worker's logs (Cloud Run service ${google_cloudfunctions2_function.restart_worker.name}), restart the
      notebook by hand if it is still down, then acknowledge the messages (add --auto-ack) so this alert closes.
    EOT
  }

  alert_strategy {
    auto_close = "86400s"
  }
}
