# Memory pressure, before the OOM killer: a Cloud Monitoring alert on the Ops Agent's memory metric
# (installed on every contest notebook, see contest/main.tf) notifies a Pub/Sub channel; on_memory_alert
# turns each opened incident into a WARN request on the restart topic, and the worker warns the owner
# (at most once per quiet period per instance).

resource "google_pubsub_topic" "memory_alerts" {
  #checkov:skip=CKV_GCP_83:Google-managed encryption is enough for Monitoring incident notifications (VM names and a memory percentage).
  name                       = "${var.name_prefix}-memory-alerts"
  message_retention_duration = "86400s"

  depends_on = [google_project_service.apis]
}

resource "google_monitoring_notification_channel" "memory_alerts" {
  display_name = "notebook-medic memory alerts (Pub/Sub)"
  type         = "pubsub"
  labels = {
    topic = google_pubsub_topic.memory_alerts.id
  }
}

# Monitoring publishes notifications as its own service agent (service-N@gcp-sa-monitoring-notification),
# which a fresh project may not have yet: service_agents.tf creates it (what `gcloud beta services
# identity create --service=monitoring.googleapis.com` does) and waits. Grant after the channel exists,
# and only then attach the channel to a policy.
resource "google_pubsub_topic_iam_member" "monitoring_publishes_memory_alerts" {
  topic  = google_pubsub_topic.memory_alerts.id
  role   = "roles/pubsub.publisher"
  member = local.service_agents["monitoring.googleapis.com"]

  depends_on = [google_monitoring_notification_channel.memory_alerts, time_sleep.service_agents]
}

resource "google_monitoring_alert_policy" "memory_pressure" {
  display_name = "notebook-medic: notebook memory pressure"
  combiner     = "OR"
  # The off switch (variables.tf automatic_actions): no warnings while automatic actions are off.
  enabled = var.automatic_actions

  conditions {
    display_name = "Memory used above ${var.memory_alert_percent}% for ${var.memory_alert_duration_seconds}s"

    condition_threshold {
      filter          = "resource.type = \"gce_instance\" AND metric.type = \"${local.memory_metric}\" AND metric.labels.state = \"used\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.memory_alert_percent
      duration        = "${var.memory_alert_duration_seconds}s"

      aggregations {
        alignment_period   = "60s"
        per_series_aligner = "ALIGN_MEAN"
      }

      trigger {
        count = 1
      }
    }
  }

  notification_channels = [google_monitoring_notification_channel.memory_alerts.id]

  documentation {
    mime_type = "text/markdown"
    content   = "A Workbench notebook is close to running out of memory. notebook-medic warns its owner in Slack; nothing is restarted because of this alert."
  }

  alert_strategy {
    auto_close = "1800s"
  }

  depends_on = [google_pubsub_topic_iam_member.monitoring_publishes_memory_alerts]
}

resource "google_cloudfunctions2_function" "on_memory_alert" {
  name        = "${var.name_prefix}-on-memory-alert"
  location    = var.region
  description = "Turns Monitoring memory-pressure incidents into WARN requests on the restart topic."

  build_config {
    runtime         = "python311"
    entry_point     = "on_memory_alert"
    service_account = google_service_account.build.id

    source {
      storage_source {
        bucket = google_storage_bucket.sources.name
        object = google_storage_bucket_object.source["on_memory_alert"].name
      }
    }
  }

  service_config {
    available_memory      = "256Mi"
    timeout_seconds       = 60
    max_instance_count    = 5
    ingress_settings      = var.private_ingress
    service_account_email = google_service_account.functions["on_memory_alert"].email
    environment_variables = local.common_environment

    secret_environment_variables {
      key        = "AUDIT_SEAL_KEY"
      project_id = data.google_project.this.number
      secret     = google_secret_manager_secret.audit_seal_key.secret_id
      version    = "latest"
    }
  }

  event_trigger {
    trigger_region        = var.region
    event_type            = "google.cloud.pubsub.topic.v1.messagePublished"
    pubsub_topic          = google_pubsub_topic.memory_alerts.id
    service_account_email = google_service_account.trigger.email
    # The function raises only when publishing to the restart topic fails: worth a retry.
    retry_policy = "RETRY_POLICY_RETRY"
  }

  depends_on = [
    google_secret_manager_secret_iam_member.audit_seal_key,
    google_project_iam_member.build,
    google_project_iam_member.build_gcf_buckets,
    google_storage_bucket_iam_member.build_reads_sources,
    google_pubsub_topic_iam_member.on_memory_alert_publishes_restarts,
    time_sleep.service_agents, # the Eventarc trigger
  ]
}

resource "google_cloud_run_service_iam_member" "memory_trigger_invoker" {
  location = var.region
  service  = google_cloudfunctions2_function.on_memory_alert.service_config[0].service
  role     = "roles/run.invoker"
  member   = google_service_account.trigger.member
}

resource "google_pubsub_topic_iam_member" "on_memory_alert_publishes_restarts" {
  topic  = google_pubsub_topic.restart.id
  role   = "roles/pubsub.publisher"
  member = google_service_account.functions["on_memory_alert"].member
}

# A dead agent must not be silent: a notebook whose Ops Agent stopped sending the memory metric gets
# no memory warning, and its kill lines no longer arrive through syslog. When a notebook that did
# report memory has reported none for 15 minutes, the organizers are told, on the same channels as
# the dead-letter and dropped-kill alerts (their email, plus extra_notification_channels): it is
# theirs to fix (infra/contest installs the agent at every start), not the participant's, so it does
# not go through on_memory_alert. It is a notification, not an automatic action: automatic_actions
# leaves it on. A notebook stopped or deleted on purpose also stops reporting: close that incident.
resource "google_monitoring_alert_policy" "memory_reports_missing" {
  display_name = "notebook-medic: a notebook stopped reporting memory"
  combiner     = "OR"

  conditions {
    display_name = "No ${local.memory_metric} from a notebook for ${local.agent_silence_seconds}s"

    condition_absent {
      filter   = "resource.type = \"gce_instance\" AND metric.type = \"${local.memory_metric}\" AND metric.labels.state = \"used\""
      duration = "${local.agent_silence_seconds}s"

      aggregations {
        alignment_period   = "300s"
        per_series_aligner = "ALIGN_MEAN"
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
      A Workbench notebook (the VM named in this incident) sent no memory metric for
      ${local.agent_silence_seconds / 60} minutes. Either it was stopped or deleted (then close this incident), or its Ops
      Agent is not running: it gets no memory warning, and its OOM kills reach notebook-medic only through
      the serial console. In the notebook's terminal (or over SSH):

          sudo systemctl status google-cloud-ops-agent

      Restarting the notebook runs infra/contest's post-startup script, which installs and starts the agent.
    EOT
  }

  alert_strategy {
    auto_close = "86400s"
  }
}
