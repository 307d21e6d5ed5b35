# A GPU's memory filling up (issue 47): a Cloud Monitoring alert on the Ops Agent's NVML metric of every contest
# notebook with a GPU notifies the same Pub/Sub channel as the memory alert (memory.tf); on_memory_alert turns each
# opened incident into a WARN request (trigger gpu) on the restart topic, and the worker warns the owner with the
# GPU's memory over the last hour and the processes holding it (the GPU guard's gpu-holders guest attribute), at
# most once per quiet period per instance. A notebook without a GPU writes no such series: nothing to evaluate.
#
# The metric (cloud.google.com/monitoring/api/metrics_opsagent, "gpu"; GoogleCloudPlatform/ops-agent confgenerator's
# nvml pipeline): agent.googleapis.com/gpu/memory/bytes_used, an INT64 gauge in bytes labelled gpu_number, model,
# uuid and memory_state (used|free), one series per GPU and state. Bytes, not a percent: the condition is a ratio
# (MetricThreshold denominator_filter), used over used + free, both reduced per VM and GPU with the same aggregation
# ("the aggregations and denominatorAggregations fields must use the same alignment period and produce time series
# that have the same periodicity and labels"), so its threshold and observed value are fractions. The VM's name is
# kept among the grouped fields (metadata.system_labels.name), which the notification carries for on_memory_alert.

locals {
  gpu_metric   = "agent.googleapis.com/gpu/memory/bytes_used"
  gpu_group_by = ["resource.label.project_id", "resource.label.zone", "resource.label.instance_id", "metadata.system_labels.name", "metric.label.gpu_number"]
}

resource "google_monitoring_alert_policy" "gpu_memory_filling" {
  display_name = "notebook-medic: notebook GPU memory filling up"
  combiner     = "OR"
  # The off switch (variables.tf automatic_actions): no warnings while automatic actions are off.
  enabled = var.automatic_actions

  conditions {
    display_name = "GPU memory used above ${var.gpu_alert_percent}% for ${var.gpu_alert_duration_seconds}s"

    condition_threshold {
      filter             = "resource.type = \"gce_instance\" AND metric.type = \"${local.gpu_metric}\" AND metric.labels.memory_state = \"used\""
      denominator_filter = "resource.type = \"gce_instance\" AND metric.type = \"${local.gpu_metric}\""
      comparison         = "COMPARISON_GT"
      threshold_value    = var.gpu_alert_percent / 100
      duration           = "${var.gpu_alert_duration_seconds}s"

      aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_MEAN"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = local.gpu_group_by
      }

      denominator_aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_MEAN"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = local.gpu_group_by
      }

      trigger {
        count = 1
      }
    }
  }

  # The memory alert's channel: one topic, one function, one reader of Monitoring's notifications.
  notification_channels = [google_monitoring_notification_channel.memory_alerts.id]

  documentation {
    mime_type = "text/markdown"
    content   = "A Workbench notebook's GPU memory is nearly full: its next allocation may fail with CUDA out of memory. notebook-medic warns its owner in Slack with what holds it; nothing is restarted because of this alert."
  }

  alert_strategy {
    # One incident per climb: it closes once the GPU is back under the threshold, and a new climb opens a new one.
    auto_close = "1800s"
  }

  depends_on = [google_pubsub_topic_iam_member.monitoring_publishes_memory_alerts]
}
