# The health sweep (issue 42): every sweep_interval_minutes, Cloud Scheduler publishes one tick to the sweep topic;
# health_sweep lists the contest's notebooks (instances.list per zone) and queues each outage on the restart topic,
# where the worker decides with the one policy (shared/app/sweep.py, shared/core/sweep.py). A notebook down with no
# kill line (a full disk, a stopped agent, a server that no longer starts, a silent VM) is seen within minutes.
#
# Identity: a Pub/Sub target is published by Cloud Scheduler's service agent
# (service-PROJECT_NUMBER@gcp-sa-cloudscheduler.iam.gserviceaccount.com; a job has no identity of its own to choose
# for it), granted roles/pubsub.publisher on the sweep topic alone. A tick carries nothing the function reads: who
# can publish to the topic can make the bot read the fleet sooner, never act on a notebook that is not down.

resource "google_pubsub_topic" "sweep" {
  #checkov:skip=CKV_GCP_83:Google-managed encryption is enough for a tick that carries the word "sweep" and nothing else.
  name = "${var.name_prefix}-sweep"

  # A tick older than one interval is dropped by the function (SWEEP_INTERVAL_SECONDS): keeping it longer is waste.
  message_retention_duration = "${var.sweep_interval_minutes * 60 + 600}s"

  depends_on = [google_project_service.apis]
}

resource "google_pubsub_topic_iam_member" "scheduler_publishes_sweeps" {
  topic  = google_pubsub_topic.sweep.id
  role   = "roles/pubsub.publisher"
  member = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-cloudscheduler.iam.gserviceaccount.com"

  # Google creates Cloud Scheduler's agent around the API's enabling (cloudscheduler.googleapis.com, locals.tf);
  # whether google_project_service_identity can ask for it is not documented, so the grant waits with the others
  # (service_agents.tf's time_sleep). Where a fresh project's first apply still finds it missing, the grant fails
  # and no job is created: the next `terraform apply` makes both (docs/operations.md).
  depends_on = [time_sleep.service_agents]
}

resource "google_cloud_scheduler_job" "sweep" {
  name        = "${var.name_prefix}-health-sweep"
  description = "notebook-medic: read every notebook's health and queue the outages (infra/sweep.tf)"
  region      = var.region
  schedule    = "*/${var.sweep_interval_minutes} * * * *"
  time_zone   = "Etc/UTC"

  # One delivery: a missed tick is replaced by the next one, minutes later.
  retry_config {
    retry_count = 0
  }

  pubsub_target {
    topic_name = google_pubsub_topic.sweep.id
    data       = base64encode("sweep")
  }

  depends_on = [google_pubsub_topic_iam_member.scheduler_publishes_sweeps]
}

resource "google_cloudfunctions2_function" "health_sweep" {
  name        = "${var.name_prefix}-health-sweep"
  location    = var.region
  description = "Reads every notebook's health on Cloud Scheduler's tick and queues each outage on the restart topic."

  build_config {
    runtime         = "python311"
    entry_point     = "health_sweep"
    service_account = google_service_account.build.id

    source {
      storage_source {
        bucket = google_storage_bucket.sources.name
        object = google_storage_bucket_object.source["health_sweep"].name
      }
    }
  }

  service_config {
    available_memory = "256Mi"
    # Under the 3-minute tick: 1,000 notebooks' guest attributes read at 500 a minute (SweepConfig) take two.
    timeout_seconds       = 170
    max_instance_count    = 1 # one sweep at a time; an overlapping tick's outages fold in the worker anyway
    ingress_settings      = var.private_ingress
    service_account_email = google_service_account.functions["health_sweep"].email
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
    pubsub_topic          = google_pubsub_topic.sweep.id
    service_account_email = google_service_account.trigger.email
    # No retry: the next tick, minutes later, is the retry, and reads the fleet as it is then.
    retry_policy = "RETRY_POLICY_DO_NOT_RETRY"
  }

  depends_on = [
    google_project_iam_member.build,
    google_project_iam_member.build_gcf_buckets,
    google_storage_bucket_iam_member.build_reads_sources,
    google_pubsub_topic_iam_member.health_sweep_publishes_restarts,
    time_sleep.service_agents, # the Eventarc trigger
  ]
}

resource "google_cloud_run_service_iam_member" "sweep_trigger_invoker" {
  location = var.region
  service  = google_cloudfunctions2_function.health_sweep.service_config[0].service
  role     = "roles/run.invoker"
  member   = google_service_account.trigger.member
}

resource "google_pubsub_topic_iam_member" "health_sweep_publishes_restarts" {
  topic  = google_pubsub_topic.restart.id
  role   = "roles/pubsub.publisher"
  member = google_service_account.functions["health_sweep"].member
}
