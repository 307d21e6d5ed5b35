# One service account per function, each with only what its code uses:
#   on_oom          list Compute Engine VMs (custom role below: the VM a kill line's instance_id names),
#                   publish to the restart topic (pubsub.tf)
#   on_memory_alert publish to the restart topic (memory.tf)
#   health_sweep    list instances (custom role below), publish to the restart topic (sweep.tf)
#   restart_worker  the Workbench calls of the worker and Monitoring's timeSeries.list (the memory picture; custom
#                   role below), read the Slack bot token, publish a waiting incident's continuation to the restart
#                   topic (pubsub.tf)
#   slack_app       list and read instances (custom role below), publish to the restart topic (pubsub.tf),
#                   read the bot token and the signing secret (secrets.tf)
# No basic role (Owner/Editor/Viewer) and no predefined notebooks role: roles/notebooks.admin would
# let the bot create, delete and re-own instances, which it never does.
resource "google_service_account" "functions" {
  for_each = toset(["health_sweep", "on_memory_alert", "on_oom", "restart_worker", "slack_app"])

  account_id   = "${var.name_prefix}-${replace(each.key, "_", "-")}"
  display_name = "notebook-medic: ${each.key} function"

  depends_on = [google_project_service.apis]
}

resource "google_project_iam_custom_role" "workbench" {
  for_each = local.workbench_permissions

  role_id     = "notebookMedic${replace(title(replace(each.key, "_", " ")), " ", "")}"
  title       = "notebook-medic ${each.key}: Workbench calls"
  description = "Exactly the Workbench API calls of notebook-medic's ${each.key} function (kept in step with the code by tests/infra/test_iam.py)."
  permissions = each.value

  depends_on = [google_project_service.apis]
}

resource "google_project_iam_member" "workbench" {
  for_each = local.workbench_permissions

  project = var.project_id
  role    = google_project_iam_custom_role.workbench[each.key].id
  member  = google_service_account.functions[each.key].member
}

# Eventarc delivers the OOM topic's messages to on_oom, the memory-alert topic's to on_memory_alert, and the sweep
# topic's to health_sweep, with this identity's OIDC token.
resource "google_service_account" "trigger" {
  account_id   = "${var.name_prefix}-trigger"
  display_name = "notebook-medic: Eventarc triggers of on_oom, on_memory_alert and health_sweep"

  depends_on = [google_project_service.apis]
}

# Builds the functions' images from the zipped sources (Cloud Build), instead of the project's
# default compute service account, which often holds Editor. Roles as documented for a custom build
# service account of Cloud Run functions: build logs, the image in Artifact Registry (gcf-artifacts),
# and the objects of the function-source buckets Cloud Functions manages (gcf-v2-*), plus read access
# to our own source bucket.
resource "google_service_account" "build" {
  account_id   = "${var.name_prefix}-build"
  display_name = "notebook-medic: builds the function images"

  depends_on = [google_project_service.apis]
}

resource "google_project_iam_member" "build" {
  for_each = toset(["roles/logging.logWriter", "roles/artifactregistry.writer"])

  project = var.project_id
  role    = each.value
  member  = google_service_account.build.member
}

resource "google_project_iam_member" "build_gcf_buckets" {
  project = var.project_id
  role    = "roles/storage.objectAdmin"
  member  = google_service_account.build.member

  condition {
    title       = "gcf-buckets-only"
    description = "Only the buckets Cloud Functions creates for sources and build caches."
    expression  = "resource.name.startsWith(\"projects/_/buckets/gcf-v2-\")"
  }
}

resource "google_storage_bucket_iam_member" "build_reads_sources" {
  bucket = google_storage_bucket.sources.name
  role   = "roles/storage.objectViewer"
  member = google_service_account.build.member
}
