# The Slack secrets are declared here; their values are added out of band (README step 5), so they
# never appear in Terraform state, in a plan, or in the repository:
#   printf '%s' "$SLACK_BOT_TOKEN" | gcloud secrets versions add notebook-medic-slack-bot-token --data-file=-
# There is deliberately no google_secret_manager_secret_version resource.

resource "google_secret_manager_secret" "slack_bot_token" {
  secret_id = "${var.name_prefix}-slack-bot-token"

  replication {
    auto {}
  }

  depends_on = [google_project_service.apis]
}

resource "google_secret_manager_secret" "slack_signing_secret" {
  secret_id = "${var.name_prefix}-slack-signing-secret"

  replication {
    auto {}
  }

  depends_on = [google_project_service.apis]
}

# The key every function seals its audit records with and the report checks them by (shared/core/seal.py; why, in
# docs/security.md): any notebook can write log entries in the bot's words, none can seal them. Added out of band
# like the Slack secrets, at least 32 characters:
#   openssl rand -hex 32 | gcloud secrets versions add notebook-medic-audit-seal-key --data-file=-
resource "google_secret_manager_secret" "audit_seal_key" {
  secret_id = "${var.name_prefix}-audit-seal-key"

  replication {
    auto {}
  }

  depends_on = [google_project_service.apis]
}

# Secret-level grants: each function reads only the secrets it uses.
resource "google_secret_manager_secret_iam_member" "bot_token" {
  for_each = toset(["restart_worker", "slack_app"])

  secret_id = google_secret_manager_secret.slack_bot_token.id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.functions[each.key].member
}

resource "google_secret_manager_secret_iam_member" "signing_secret" {
  secret_id = google_secret_manager_secret.slack_signing_secret.id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.functions["slack_app"].member
}

resource "google_secret_manager_secret_iam_member" "audit_seal_key" {
  for_each = google_service_account.functions

  secret_id = google_secret_manager_secret.audit_seal_key.id
  role      = "roles/secretmanager.secretAccessor"
  member    = each.value.member
}
