# A disk filling up (issue 43): a Cloud Monitoring alert on the Ops Agent's disk metric, on the boot disk and
# the data disk (/home/jupyter) of every contest notebook, notifies the same Pub/Sub channel as the memory
# alert (memory.tf); on_memory_alert turns each opened incident into a WARN request (trigger disk) on the
# restart topic, and the worker warns the owner with the disk's curve and what fills it (the guard's
# disk-report guest attribute), at most once per quiet period per instance.
#
# The metric (GoogleCloudPlatform/ops-agent integration_test/agent_metrics/metadata.yaml):
# agent.googleapis.com/disk/percent_used, a DOUBLE gauge labelled `device` and `state` (free|reserved|used),
# one series per filesystem device; it has no mount-point label. `device` is the device path (gcpdiag's
# vm_performance runbook filters `metric.device !~ '/dev/loop.*'`): the filter keeps the VM's persistent
# disks, SCSI (/dev/sda1 the boot disk's root, /dev/sdb the data disk) or NVMe (/dev/nvme0n1p1, /dev/nvme0n2),
# and leaves out loop devices (snap images, always 100 % used), tmpfs and overlays. One series per device: an
# incident per disk, its device in the notification's metric labels.

resource "google_monitoring_alert_policy" "disk_filling" {
  display_name = "notebook-medic: notebook disk filling up"
  combiner     = "OR"
  # The off switch (variables.tf automatic_actions): no warnings while automatic actions are off.
  enabled = var.automatic_actions

  conditions {
    display_name = "Disk used above ${var.disk_alert_percent}% for ${var.disk_alert_duration_seconds}s"

    condition_threshold {
      filter          = "resource.type = \"gce_instance\" AND metric.type = \"${local.disk_metric}\" AND metric.labels.state = \"used\" AND metric.labels.device = monitoring.regex.full_match(\"${local.disk_devices}\")"
      comparison      = "COMPARISON_GT"
      threshold_value = var.disk_alert_percent
      duration        = "${var.disk_alert_duration_seconds}s"

      aggregations {
        alignment_period   = "60s"
        per_series_aligner = "ALIGN_MEAN"
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
    content   = "A Workbench notebook's disk is nearly full. notebook-medic warns its owner in Slack with what fills it; nothing is restarted because of this alert (a reset does not empty a disk)."
  }

  alert_strategy {
    # One incident per climb: it closes once the disk is back under the threshold (or after a day without data),
    # and a new climb opens a new one.
    auto_close = "86400s"
  }

  depends_on = [google_pubsub_topic_iam_member.monitoring_publishes_memory_alerts]
}
