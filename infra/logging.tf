# The kernel's OOM-kill lines, from every Workbench VM in the project, to the OOM topic.
# The Ops Agent ships them as logs/syslog (jsonPayload.message), the legacy agent as textPayload,
# serial-port logging as textPayload of serialconsole.googleapis.com logs: the filter covers all three.
resource "google_logging_project_sink" "oom" {
  name        = "${var.name_prefix}-oom-kills"
  description = "Kernel OOM kills on Compute Engine VMs (Workbench instances) -> notebook-medic on_oom"
  destination = "pubsub.googleapis.com/${google_pubsub_topic.oom.id}"
  filter      = local.oom_filter

  # The sink gets its own service account, which may publish to this one topic and nothing else.
  unique_writer_identity = true

  # The off switch (variables.tf automatic_actions): a disabled sink exports nothing, so no kill
  # reaches on_oom and nothing is restarted automatically; /restart-notebook still works.
  disabled = !var.automatic_actions

  depends_on = [google_project_service.apis]
}

resource "google_pubsub_topic_iam_member" "sink_publishes_oom" {
  topic  = google_pubsub_topic.oom.id
  role   = "roles/pubsub.publisher"
  member = google_logging_project_sink.oom.writer_identity
}
