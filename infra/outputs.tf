output "slack_request_url" {
  description = "Paste into manifest.yaml as the slash command's url, settings.interactivity.request_url and settings.event_subscriptions.request_url."
  value       = google_cloudfunctions2_function.slack_app.url
}

output "oom_topic" {
  description = "Topic the log sink publishes OOM kills to (on_oom's trigger)."
  value       = google_pubsub_topic.oom.id
}

output "restart_topic" {
  description = "Topic every restart request passes through (RESTART_TOPIC)."
  value       = google_pubsub_topic.restart.id
}

output "dead_letter_subscription" {
  description = "Pull subscription holding restart requests that exhausted their deliveries."
  value       = google_pubsub_subscription.dead_letter.id
}

output "sink_writer_identity" {
  description = "The log sink's own service account (publisher on the OOM topic only)."
  value       = google_logging_project_sink.oom.writer_identity
}

output "sink_filter" {
  description = "The Logging filter of the sink (same string as shared/core/oom_parse.py SINK_FILTER)."
  value       = local.oom_filter
}

output "function_service_accounts" {
  description = "Service account of each function."
  value       = { for name, account in google_service_account.functions : name => account.email }
}

output "secret_ids" {
  description = "Add the Slack values to these secrets out of band (README step 5)."
  value = {
    SLACK_BOT_TOKEN      = google_secret_manager_secret.slack_bot_token.secret_id
    SLACK_SIGNING_SECRET = google_secret_manager_secret.slack_signing_secret.secret_id
  }
}

output "source_objects" {
  description = "The source object (named by its zip's MD5) each function was built from: what is deployed, for a rollback (README)."
  value       = { for name, source in google_storage_bucket_object.source : name => source.name }
}
