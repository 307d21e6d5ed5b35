locals {
  dist_dir = var.dist_dir != "" ? var.dist_dir : "${path.module}/../dist"

  # The restart worker's run fits inside its timeout, which fits inside the push subscription's ack
  # deadline (600 s is Pub/Sub's maximum): a push that is still running is never redelivered twice.
  # The budget bounds the waiting (health, the reset); what follows it must fit in the other 120 s.
  # At most, after a reset not seen to finish by the deadline: the labels' re-read for the record (one
  # attempt, 20 s: the worker retries it only while the retries fit in the budget); three Slack calls,
  # the alert, the button's alert or the owner's DM, and the requester's reply (5 s per try, up to 15 s
  # with slack_sdk's retries on 429/5xx and a dropped connection; 20 s for a post sent once more after a
  # timeout); and the label record (20 s per attempt, retried for 30 s: up to 50 s, an attempt begun near
  # the end running its 20 s). 20 + 50 + 50 = 120 s. A re-read retried like the record would add 30 s.
  # Were it to overrun, the timeout would cut it and the redelivery would report the restart twice.
  worker_timeout_seconds = 540
  worker_budget_seconds  = local.worker_timeout_seconds - 120
  push_ack_deadline      = 600

  # The audience of the push's OIDC token, which the worker checks itself (PUSH_AUDIENCE, issue 25): the worker's
  # deterministic run.app URL, https://SERVICE-PROJECT_NUMBER.REGION.run.app, which Cloud Run gives a service whose
  # name fits it (run/docs/triggering/https-request, "Deterministic URL"; here at most 42 characters of 63) and
  # accepts as an audience (run/docs/configuring/custom-audiences: "the receiving service's *.run.app URL").
  # Not service_config[0].uri: the function's environment can't name its own URL (a cycle).
  worker_push_audience = "https://${var.name_prefix}-restart-worker-${data.google_project.this.number}.${var.region}.run.app"

  # The Logging filter of the sink. It must equal shared/core/oom_parse.py SINK_FILTER character for
  # character (tests/infra checks this, and that it matches every OOM sample and no other line).
  # log_id(): only the logs a kernel line arrives in (Ops Agent and legacy agent syslog, the Ops Agent's
  # systemd_journald receiver, the serial port); jsonPayload.MESSAGE is the journald receiver's field.
  # `:` is a case-insensitive substring match: "out of memory: kill" covers "Kill process",
  # "Killed process" and "Memory cgroup out of memory: Killed process"; the second term covers
  # "Out of memory (oom_kill_allocating_task): Killed process" (vm.oom_kill_allocating_task=1).
  # Also the kill's summary "oom-kill:constraint=…,task_memcg=…" (the unit the victim ran in) and the
  # guard's watcher's "notebook-medic-watcher: interrupted kernel" and "...: refused allocation kernel" (docs/policy.md,
  # issues 22, 32 and 40), and the GPU guard's "notebook-medic-gpu: freed pid=" (issue 47).
  oom_filter = "resource.type=\"gce_instance\" AND (log_id(\"syslog\") OR log_id(\"systemd_logs\") OR log_id(\"serialconsole.googleapis.com/serial_port_1_output\")) AND (textPayload:\"out of memory: kill\" OR jsonPayload.message:\"out of memory: kill\" OR jsonPayload.MESSAGE:\"out of memory: kill\" OR textPayload:\"out of memory (oom_kill_allocating_task): kill\" OR jsonPayload.message:\"out of memory (oom_kill_allocating_task): kill\" OR jsonPayload.MESSAGE:\"out of memory (oom_kill_allocating_task): kill\" OR textPayload:\"oom-kill:constraint=\" OR jsonPayload.message:\"oom-kill:constraint=\" OR jsonPayload.MESSAGE:\"oom-kill:constraint=\" OR textPayload:\"notebook-medic-watcher: interrupted kernel\" OR jsonPayload.message:\"notebook-medic-watcher: interrupted kernel\" OR jsonPayload.MESSAGE:\"notebook-medic-watcher: interrupted kernel\" OR textPayload:\"notebook-medic-watcher: refused allocation kernel\" OR jsonPayload.message:\"notebook-medic-watcher: refused allocation kernel\" OR jsonPayload.MESSAGE:\"notebook-medic-watcher: refused allocation kernel\" OR textPayload:\"notebook-medic-gpu: freed pid=\" OR jsonPayload.message:\"notebook-medic-gpu: freed pid=\" OR jsonPayload.MESSAGE:\"notebook-medic-gpu: freed pid=\")"

  # The Ops Agent's memory metric: the memory warning's threshold and the no-reports alert (memory.tf).
  memory_metric = "agent.googleapis.com/memory/percent_used"
  # The Ops Agent's disk metric and the devices of a notebook's persistent disks (disk.tf, issue 43).
  disk_metric  = "agent.googleapis.com/disk/percent_used"
  disk_devices = "/dev/(sd[a-z]+|nvme[0-9]+n[0-9]+)(p?[0-9]+)?"
  # How long a notebook may send no memory metric before the organizers hear of it.
  agent_silence_seconds = 900

  # One environment for every function: the same policy must hold on both sides of the restart topic.
  # Secrets are not here; they come from Secret Manager (secret_environment_variables).
  common_environment = merge(var.extra_environment, {
    GOOGLE_CLOUD_PROJECT            = var.project_id
    RESTART_TOPIC                   = google_pubsub_topic.restart.id
    SLACK_ALERT_CHANNEL             = var.slack_alert_channel
    ORGANIZER_EMAILS                = join(",", var.organizer_emails)
    ORGANIZER_USERGROUP             = var.organizer_usergroup
    WORKBENCH_ZONES                 = join(",", var.zones)
    RESTART_POLICY                  = var.restart_policy
    DRY_RUN                         = tostring(var.dry_run)
    OWNER_DM                        = tostring(var.owner_dm)
    MESSAGE_LANGUAGE                = var.message_language
    DISPLAY_TIMEZONE                = var.display_timezone
    CONTEST_START                   = var.contest_start == null ? "" : var.contest_start
    CONTEST_END                     = var.contest_end == null ? "" : var.contest_end
    MAX_EVENT_AGE_SECONDS           = tostring(var.max_event_age_seconds)
    MANUAL_RESTART_INTERVAL_SECONDS = tostring(var.manual_restart_interval_seconds)
    WORKER_BUDGET_SECONDS           = tostring(local.worker_budget_seconds)
    PUSH_AUDIENCE                   = local.worker_push_audience
    PUSH_SERVICE_ACCOUNT            = google_service_account.push.email
    SCHEDULE_SUBSCRIPTION           = local.schedule_subscription
    SWEEP_INTERVAL_SECONDS          = tostring(var.sweep_interval_minutes * 60)
  })

  # Google's service agents this module grants roles to or relies on, by the API they belong to.
  # service_agents.tf makes each one exist (and waits) before any grant or trigger uses it.
  service_agents = {
    "eventarc.googleapis.com"   = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-eventarc.iam.gserviceaccount.com"
    "monitoring.googleapis.com" = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-monitoring-notification.iam.gserviceaccount.com"
    "pubsub.googleapis.com"     = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
  }
  pubsub_service_agent = local.service_agents["pubsub.googleapis.com"]

  # The Workbench permissions each function's code calls, and nothing else. tests/infra/test_iam.py
  # derives the same sets from the NotebookServiceClient calls reachable from functions/<name>/main.py
  # and fails when the two differ (a missing permission is a PERMISSION_DENIED at the worst moment;
  # an extra one is privilege nobody uses).
  workbench_permissions = {
    restart_worker = [
      "notebooks.instances.get",
      "notebooks.instances.list", # a /restart-notebook the Slack app acknowledged first: which instance is meant
      "notebooks.instances.reset",
      "notebooks.instances.start", # resize: start again on the new machine type (or the old one)
      "notebooks.instances.stop",
      "notebooks.instances.update", # history labels; gce_setup.machine_type for a resize
      "notebooks.operations.get",
      "notebooks.operations.list", # after a crash mid-restart: did the reset reach the API?
      # Cloud Monitoring, not Workbench: the memory curve before a kill (shared/adapters/memory_series.py).
      "monitoring.timeSeries.list",
      # Compute Engine, not Workbench: a disk warning's "what fills it", the guard's disk-report guest attribute;
      # a help ticket's guard heartbeat, and its VM's id by name for the ticket's memory picture (instances.list).
      "compute.instances.getGuestAttributes",
      "compute.instances.list",
    ]
    slack_app = [
      "notebooks.instances.get", # a button press: the pressed instance's labels, for the replay check
      "notebooks.instances.list",
      # Cloud Monitoring, not Workbench: the Home tab's memory in use, one read for the fleet (issue 28).
      "monitoring.timeSeries.list",
    ]
    # Compute Engine, not Workbench: which VM has the instance_id a kill line carries (shared/adapters/compute.py).
    on_oom = [
      "compute.instances.list",
    ]
    on_memory_alert = [
      "compute.instances.list", # the notification's VM id, held to the instance it names (issue 25)
    ]
    health_sweep = [
      "notebooks.instances.list", # every notebook's state and health, a page per zone (issue 42)
      # Compute Engine, not Workbench: the guard's heartbeat, disk report and GPU state (guest attributes).
      "compute.instances.getGuestAttributes",
    ]
  }

  apis = toset([
    "artifactregistry.googleapis.com", # function images
    "cloudbuild.googleapis.com",       # function builds
    "cloudfunctions.googleapis.com",
    "cloudscheduler.googleapis.com", # the health sweep's tick (sweep.tf)
    "compute.googleapis.com",        # on_oom: the VM behind a kill line's instance_id
    "eventarc.googleapis.com",       # on_oom's Pub/Sub trigger
    "iam.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
    "notebooks.googleapis.com",
    "pubsub.googleapis.com",
    "run.googleapis.com",
    "secretmanager.googleapis.com",
    "storage.googleapis.com",
  ])
}

# Enabling is idempotent and disabling on destroy would break anything else in the project that uses
# the same APIs, so destroy leaves them on.
resource "google_project_service" "apis" {
  for_each = local.apis

  project            = var.project_id
  service            = each.value
  disable_on_destroy = false
}
