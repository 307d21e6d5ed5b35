# Google's service agents, made to exist before anything is granted to them or relies on them.
#
# On a project whose APIs were just enabled, a service agent is created lazily, and for a while
# after it is created IAM does not yet know it:
#   - the first Eventarc trigger (on_oom's, on_memory_alert's) fails with "Permission denied while
#     using the Eventarc Service Agent" (terraform-provider-google issue 25294);
#   - a grant to service-N@gcp-sa-pubsub (dead letters, push tokens) or to
#     service-N@gcp-sa-monitoring-notification (memory.tf) fails with "does not exist".
# Google's own modules (terraform-google-cloud-functions and the examples built on it) ask for each
# identity with google_project_service_identity (google-beta) and then wait; so does this file.
# tests/infra/test_fresh_project.py keeps every trigger and every grant to an agent behind the wait.

resource "google_project_service_identity" "agents" {
  provider = google-beta
  for_each = local.service_agents

  project = var.project_id
  service = each.key

  depends_on = [google_project_service.apis]
}

# Eventarc's agent needs its role on the project to deliver Pub/Sub events to a function; a fresh
# project's agent may not have been granted it yet.
resource "google_project_iam_member" "eventarc_agent" {
  #checkov:skip=CKV_GCP_49:The role Google grants Eventarc's own service agent (it lets Eventarc mint tokens for the trigger's account); granted to that agent only, never to a person or one of ours.
  project = var.project_id
  role    = "roles/eventarc.serviceAgent"
  member  = local.service_agents["eventarc.googleapis.com"]

  depends_on = [google_project_service_identity.agents]
}

# IAM is eventually consistent: a new identity or grant can take a minute to be seen everywhere.
resource "time_sleep" "service_agents" {
  create_duration = "60s"

  depends_on = [
    google_project_service_identity.agents,
    google_project_iam_member.eventarc_agent,
  ]
}
