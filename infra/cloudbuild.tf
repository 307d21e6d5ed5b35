# Cloud Build's two identities (cloudbuild.yaml, cloudbuild-deploy.yaml), so that the test suite, and
# every package it installs from PyPI, never runs with a right to deploy.
#
#   <name_prefix>-ci-test   runs cloudbuild.yaml (make test, make package): writes build logs and
#                           reads the source gcloud uploads to gs://PROJECT_cloudbuild; nothing else
#   <name_prefix>-deployer  runs cloudbuild-deploy.yaml (checks a test build passed, packages with the
#                           standard library, terraform apply): everything Terraform manages here, so
#                           treat it as owner-equivalent and let only organizers run that build
#
# They are created by the first `terraform apply`, which a person runs (infra/README.md step 7); from
# then on Cloud Build can deploy. Whoever submits a build needs iam.serviceAccounts.actAs on its account.

resource "google_service_account" "ci_test" {
  account_id   = "${var.name_prefix}-ci-test"
  display_name = "notebook-medic: Cloud Build test builds (no deploy rights)"

  depends_on = [google_project_service.apis]
}

resource "google_project_iam_member" "ci_test_logs" {
  project = var.project_id
  role    = "roles/logging.logWriter"
  member  = google_service_account.ci_test.member
}

resource "google_project_iam_member" "ci_test_reads_source" {
  project = var.project_id
  role    = "roles/storage.objectViewer"
  member  = google_service_account.ci_test.member

  condition {
    title       = "cloudbuild-source-only"
    description = "Only the bucket gcloud builds submit uploads the source to."
    expression  = "resource.name.startsWith(\"projects/_/buckets/${var.project_id}_cloudbuild\")"
  }
}

resource "google_service_account" "deployer" {
  account_id   = "${var.name_prefix}-deployer"
  display_name = "notebook-medic: Cloud Build deploys (terraform apply of infra/)"

  depends_on = [google_project_service.apis]
}

resource "google_project_iam_member" "deployer" {
  #checkov:skip=CKV_GCP_41:The deployer applies infra/, which creates service accounts and deploys functions that run as them: it must act as them. Only the deploy build (organizers) runs as it.
  #checkov:skip=CKV_GCP_49:The deployer applies infra/, which creates service accounts and grants them roles: it must administer them. Only the deploy build (organizers) runs as it.
  for_each = local.deployer_roles

  project = var.project_id
  role    = each.value
  member  = google_service_account.deployer.member
}

locals {
  # What `terraform apply` of infra/ needs, by the resources it manages.
  deployer_roles = toset([
    "roles/cloudbuild.builds.viewer",        # the deploy build's check that the commit was tested
    "roles/cloudfunctions.admin",            # the functions
    "roles/eventarc.admin",                  # their Pub/Sub triggers
    "roles/iam.roleAdmin",                   # the Workbench custom roles
    "roles/iam.serviceAccountAdmin",         # the functions' and Cloud Build's service accounts
    "roles/iam.serviceAccountUser",          # deploying functions that run as those accounts
    "roles/logging.configWriter",            # the OOM sink
    "roles/logging.logWriter",               # its own build logs
    "roles/monitoring.editor",               # alert policies and notification channels
    "roles/pubsub.admin",                    # topics, subscriptions and their grants
    "roles/resourcemanager.projectIamAdmin", # the project-level grants
    "roles/run.admin",                       # the invoker grants on the functions' services
    "roles/secretmanager.admin",             # the secrets (never their values) and their grants
    "roles/serviceusage.serviceUsageAdmin",  # the APIs and the service agents
    "roles/storage.admin",                   # the source bucket, and the state and tfvars bucket
  ])
}
