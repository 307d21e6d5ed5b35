# The functions (Cloud Functions 2nd gen, Python 3.11; on_memory_alert is in memory.tf), built from the zips `make package`
# writes to dist/<function>.zip: main.py, the shared/ package and requirements.txt at the root.
# The object name carries the zip's MD5, so a changed source (and only a changed source) redeploys.
# The zips are byte-for-byte reproducible, so a release is its commit: rolling back is building the
# previous commit and applying it, which brings back the very same object names (infra/README.md).

resource "google_storage_bucket" "sources" {
  #checkov:skip=CKV_GCP_62:Access logs of a bucket that holds only the bot's own source zips (written by Terraform, read by Cloud Build) would log nothing anyone reviews; Cloud Audit Logs already record admin access.
  name     = "${var.project_id}-${var.name_prefix}-src"
  location = var.region

  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  # `terraform destroy` empties and deletes it: a teardown leaves nothing billed (infra/README.md).
  # The bucket holds only zips `make package` rebuilds from any commit.
  force_destroy = true

  versioning {
    enabled = true
  }

  # Each release uploads objects under new names (the zip's MD5) and Terraform deletes the old ones,
  # which versioning keeps as noncurrent. No object ever gets a newer version of its own name, so a
  # num_newer_versions rule would never match: delete noncurrent versions 30 days after they stop
  # being current instead.
  lifecycle_rule {
    condition {
      days_since_noncurrent_time = 30
      with_state                 = "ARCHIVED"
    }
    action {
      type = "Delete"
    }
  }

  depends_on = [google_project_service.apis]
}

resource "google_storage_bucket_object" "source" {
  for_each = google_service_account.functions

  name   = "${each.key}-${filemd5("${local.dist_dir}/${each.key}.zip")}.zip"
  bucket = google_storage_bucket.sources.name
  source = "${local.dist_dir}/${each.key}.zip"
}

# --- on_oom: OOM topic -> restart topic -------------------------------------------------------------
resource "google_cloudfunctions2_function" "on_oom" {
  name        = "${var.name_prefix}-on-oom"
  location    = var.region
  description = "Reads kernel OOM kills from the log sink and queues a restart request per instance."

  build_config {
    runtime         = "python311"
    entry_point     = "on_oom"
    service_account = google_service_account.build.id

    source {
      storage_source {
        bucket = google_storage_bucket.sources.name
        object = google_storage_bucket_object.source["on_oom"].name
      }
    }
  }

  service_config {
    available_memory      = "256Mi"
    timeout_seconds       = 60
    max_instance_count    = 10
    ingress_settings      = var.private_ingress
    service_account_email = google_service_account.functions["on_oom"].email
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
    pubsub_topic          = google_pubsub_topic.oom.id
    service_account_email = google_service_account.trigger.email
    # At-least-once with retries: a failed publish to the restart topic is retried by Eventarc.
    # The code drops events older than MAX_EVENT_AGE_SECONDS instead of raising, so a retry can't
    # loop for days on a poison message.
    retry_policy = "RETRY_POLICY_RETRY"
  }

  depends_on = [
    google_secret_manager_secret_iam_member.audit_seal_key,
    google_project_iam_member.build,
    google_project_iam_member.build_gcf_buckets,
    google_storage_bucket_iam_member.build_reads_sources,
    google_pubsub_topic_iam_member.on_oom_publishes_restarts,
    time_sleep.service_agents, # the Eventarc trigger
  ]
}

# Only the trigger's identity may invoke on_oom.
resource "google_cloud_run_service_iam_member" "oom_trigger_invoker" {
  location = var.region
  service  = google_cloudfunctions2_function.on_oom.service_config[0].service
  role     = "roles/run.invoker"
  member   = google_service_account.trigger.member
}

# --- restart_worker: push from the restart subscription --------------------------------------------
resource "google_cloudfunctions2_function" "restart_worker" {
  name        = "${var.name_prefix}-restart-worker"
  location    = var.region
  description = "Observes an instance, decides, resets or stops it, reports to Slack; one request per instance at a time."

  build_config {
    runtime         = "python311"
    entry_point     = "restart_worker"
    service_account = google_service_account.build.id

    source {
      storage_source {
        bucket = google_storage_bucket.sources.name
        object = google_storage_bucket_object.source["restart_worker"].name
      }
    }
  }

  service_config {
    # Half a vCPU: the worker mostly waits on Workbench and Slack, and CPU is billed while it waits.
    available_memory = "512Mi"
    available_cpu    = "0.5"
    # WORKER_BUDGET_SECONDS (420) < timeout (540) < the subscription's ack deadline (600).
    timeout_seconds = local.worker_timeout_seconds
    # One restart per instance: requests for different notebooks run side by side, each request
    # blocks its own instance of the function while it follows the reset.
    max_instance_count               = var.worker_max_instances
    max_instance_request_concurrency = 1
    ingress_settings                 = var.private_ingress
    service_account_email            = google_service_account.functions["restart_worker"].email
    environment_variables            = local.common_environment

    secret_environment_variables {
      key        = "AUDIT_SEAL_KEY"
      project_id = data.google_project.this.number
      secret     = google_secret_manager_secret.audit_seal_key.secret_id
      version    = "latest"
    }

    secret_environment_variables {
      key        = "SLACK_BOT_TOKEN"
      project_id = data.google_project.this.number # the provider prefers the number
      secret     = google_secret_manager_secret.slack_bot_token.secret_id
      version    = "latest"
    }
  }

  depends_on = [
    google_secret_manager_secret_iam_member.audit_seal_key,
    google_project_iam_member.build,
    google_project_iam_member.build_gcf_buckets,
    google_storage_bucket_iam_member.build_reads_sources,
    google_secret_manager_secret_iam_member.bot_token,
    google_project_iam_member.workbench,
    google_pubsub_topic_iam_member.restart_worker_publishes_restarts,
  ]
}

# Private: only the push subscription's identity may invoke the worker.
resource "google_cloud_run_service_iam_member" "worker_invoker" {
  location = var.region
  service  = google_cloudfunctions2_function.restart_worker.service_config[0].service
  role     = "roles/run.invoker"
  member   = google_service_account.push.member
}

# --- slack_app: the slash command and the alert buttons ---------------------------------------------
resource "google_cloudfunctions2_function" "slack_app" {
  name        = "${var.name_prefix}-slack"
  location    = var.region
  description = "/restart-notebook and the organizer buttons; answers Slack within 3 s and queues the work."

  build_config {
    runtime         = "python311"
    entry_point     = "slack_app"
    service_account = google_service_account.build.id

    source {
      storage_source {
        bucket = google_storage_bucket.sources.name
        object = google_storage_bucket_object.source["slack_app"].name
      }
    }
  }

  service_config {
    available_memory = "512Mi"
    available_cpu    = "1"
    timeout_seconds  = 60
    # A warm instance answers within Slack's 3 seconds; a cold start might not (cost: README).
    min_instance_count               = var.slack_min_instances
    max_instance_count               = 10
    max_instance_request_concurrency = 8
    # Slack calls from the internet; every request is authenticated by its signature (Bolt).
    #checkov:skip=CKV_GCP_124:Slack's servers call this endpoint from the internet; Bolt rejects any request without a valid Slack signature.
    ingress_settings      = "ALLOW_ALL"
    service_account_email = google_service_account.functions["slack_app"].email
    environment_variables = local.common_environment

    secret_environment_variables {
      key        = "AUDIT_SEAL_KEY"
      project_id = data.google_project.this.number
      secret     = google_secret_manager_secret.audit_seal_key.secret_id
      version    = "latest"
    }

    secret_environment_variables {
      key        = "SLACK_BOT_TOKEN"
      project_id = data.google_project.this.number # the provider prefers the number
      secret     = google_secret_manager_secret.slack_bot_token.secret_id
      version    = "latest"
    }

    secret_environment_variables {
      key        = "SLACK_SIGNING_SECRET"
      project_id = data.google_project.this.number # the provider prefers the number
      secret     = google_secret_manager_secret.slack_signing_secret.secret_id
      version    = "latest"
    }
  }

  depends_on = [
    google_secret_manager_secret_iam_member.audit_seal_key,
    google_project_iam_member.build,
    google_project_iam_member.build_gcf_buckets,
    google_storage_bucket_iam_member.build_reads_sources,
    google_secret_manager_secret_iam_member.bot_token,
    google_secret_manager_secret_iam_member.signing_secret,
    google_project_iam_member.workbench,
    google_pubsub_topic_iam_member.slack_app_publishes_restarts,
  ]
}

# The one public endpoint. Slack can't present Google credentials, so allUsers may invoke it; the
# request signature (HMAC of the signing secret over the raw body, 5-minute window) is the guard.
resource "google_cloud_run_service_iam_member" "slack_public" {
  #checkov:skip=CKV_GCP_102:Slack's servers must reach this endpoint without Google credentials; Bolt rejects every request whose Slack signature does not verify (401, no side effect).
  location = var.region
  service  = google_cloudfunctions2_function.slack_app.service_config[0].service
  role     = "roles/run.invoker"
  member   = "allUsers"
}
