locals {
  # One row per participant: name,owner_email,machine_type. A repeated name fails the plan
  # ("duplicate object key"); every other rule is a precondition on the instance below.
  participants = { for row in csvdecode(file("${path.module}/${var.participants_csv}")) : row.name => row }

  # Instance metadata: only keys Workbench lets the owner of an instance set. Workbench owns its
  # protected keys ("Protected metadata keys" on the Workbench "manage metadata" page; the provider's
  # WorkbenchInstanceProvidedMetadata list: install-monitoring-agent, serial-port-logging-enable,
  # proxy-mode, proxy-user-mail, enable-guest-attributes, ...) and overwrites them; provider 6.x even
  # drops install-monitoring-agent from the plan. So:
  #   - single user: instance_owners below; Workbench itself then sets proxy-mode=mail and
  #     proxy-user-mail=<owner>, which is where notebook-medic reads the owner back;
  #   - the Ops Agent (syslog with the kernel's OOM lines, and the memory metric) and the guard (an OOM
  #     kill costs one kernel, never the notebook: guard/install.sh): the documented post-startup script,
  #     post-startup.sh, from the bucket below, at every start; two switches of ours tell it which to do
  #     (a guard switched off is removed at the next start, not left behind);
  #   - report-event-health: the health agent's report the worker reads after a reset;
  #   - idle-timeout-seconds: idle shutdown set on purpose (Workbench docs, "Idle shutdown": on by default at
  #     10800 s; it needs guest attributes, which Workbench enables by default).
  region = regex("^(.+)-[a-z]$", var.zone)[0]

  base_metadata = {
    "report-event-health"  = "true"
    "idle-timeout-seconds" = tostring(var.idle_shutdown_minutes * 60)
  }
  setup_metadata = {
    "post-startup-script"          = "gs://${google_storage_bucket.setup.name}/${google_storage_bucket_object.post_startup.name}"
    "post-startup-script-behavior" = "download_and_run_every_start"
    "notebook-medic-ops-agent"     = var.install_ops_agent ? "on" : "off"
    "notebook-medic-guard"         = var.install_guard ? "on" : "off"
  }
  metadata = merge(local.base_metadata, local.setup_metadata)
}

resource "google_project_service" "apis" {
  for_each = toset(["bigquery.googleapis.com", "cloudscheduler.googleapis.com", "compute.googleapis.com", "iam.googleapis.com", "logging.googleapis.com", "monitoring.googleapis.com", "notebooks.googleapis.com", "pubsub.googleapis.com", "storage.googleapis.com"])

  project            = var.project_id
  service            = each.value
  disable_on_destroy = false
}

# The notebooks run as this account: it may write logs and metrics (what the Ops Agent ships) and
# nothing else. Never give it the contest's data: every participant may act as it (bigquery.tf).
resource "google_service_account" "notebook_vm" {
  account_id   = "${var.contest_name}-notebooks"
  display_name = "${var.contest_name}: Workbench notebooks' VM identity"

  depends_on = [google_project_service.apis]
}

# The post-startup script every notebook runs (post-startup.sh, install-ops-agent.sh, guard/*), readable by the
# notebooks only.
resource "google_storage_bucket" "setup" {
  #checkov:skip=CKV_GCP_62:The bucket holds one setup script from this repository; access logs of it would record only the notebooks reading it at start.
  #checkov:skip=CKV_GCP_78:The script is in git; versions of it in the bucket add nothing a checkout does not have.
  name     = "${var.project_id}-${var.contest_name}-setup"
  location = local.region

  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  # Destroying the contest removes the script with the bucket: nothing is left billed.
  force_destroy = true

  depends_on = [google_project_service.apis]
}

resource "google_storage_bucket_object" "post_startup" {
  name   = "post-startup.sh"
  bucket = google_storage_bucket.setup.name
  source = "${path.module}/post-startup.sh"
}

resource "google_storage_bucket_object" "install_ops_agent" {
  name   = "install-ops-agent.sh"
  bucket = google_storage_bucket.setup.name
  source = "${path.module}/install-ops-agent.sh"
}

# The guard and what it installs (guard/install.sh, the memory watcher and its unit), one object each under
# guard/: post-startup.sh lists the prefix and downloads them all.
resource "google_storage_bucket_object" "guard" {
  for_each = fileset("${path.module}/guard", "*")

  name   = "guard/${each.value}"
  bucket = google_storage_bucket.setup.name
  source = "${path.module}/guard/${each.value}"
}

resource "google_storage_bucket_iam_member" "notebook_vm_reads_setup" {
  bucket = google_storage_bucket.setup.name
  role   = "roles/storage.objectViewer"
  member = google_service_account.notebook_vm.member
}

resource "google_project_iam_member" "notebook_vm" {
  for_each = toset(["roles/logging.logWriter", "roles/monitoring.metricWriter"])

  project = var.project_id
  role    = each.value
  member  = google_service_account.notebook_vm.member
}

resource "google_workbench_instance" "participant" {
  #checkov:skip=CKV2_GCP_28:Participants pip-install packages from PyPI; the notebooks keep an external IP unless disable_public_ip is set on a network with Cloud NAT. JupyterLab itself is reached only through the authenticated Workbench proxy.
  #checkov:skip=CKV2_GCP_27:Contest notebooks hold the contest's published data; Google-managed disk encryption is used instead of a per-project KMS key and its service-agent grants.
  for_each = local.participants

  name     = each.key
  location = var.zone

  # Single user: this owner only. Changing the owner means a new instance.
  instance_owners = [lower(each.value.owner_email)]

  gce_setup {
    machine_type      = each.value.machine_type
    disable_public_ip = var.disable_public_ip
    metadata          = local.metadata

    service_accounts {
      email = google_service_account.notebook_vm.email
    }

    boot_disk {
      disk_size_gb = var.boot_disk_size_gb
      disk_type    = "PD_BALANCED"
    }

    shielded_instance_config {
      enable_secure_boot          = true
      enable_vtpm                 = true
      enable_integrity_monitoring = true
    }

    dynamic "network_interfaces" {
      for_each = var.network != "" ? [1] : []
      content {
        network = var.network
        subnet  = var.subnet != "" ? var.subnet : null
      }
    }
  }

  labels = {
    # Label values allow only lowercase letters, digits, _ and -.
    participant = substr(replace(lower(split("@", each.value.owner_email)[0]), "/[^a-z0-9_-]/", "_"), 0, 63)
  }

  lifecycle {
    # After creation the machine type and the running state belong to notebook-medic (an approved
    # resize, an organizer's Stop): a later apply, e.g. for a late participant, must not stop a
    # resized notebook to put it back on the CSV's machine type, or start one that was stopped.
    ignore_changes = [gce_setup[0].machine_type, desired_state]

    precondition {
      condition     = can(regex("^[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$", each.key))
      error_message = "participants.csv: name ${each.key} is not a valid Workbench instance name (lowercase letters, digits, hyphens; starts with a letter)."
    }
    precondition {
      condition     = can(regex("^[^@\\s,]+@[^@\\s,]+\\.[^@\\s,]+$", each.value.owner_email))
      error_message = "participants.csv: owner_email of ${each.key} is not an email address."
    }
    precondition {
      condition     = can(regex("^[a-z][a-z0-9]*-[a-z0-9-]+$", each.value.machine_type))
      error_message = "participants.csv: machine_type of ${each.key} is not a machine type (e.g. n1-standard-4)."
    }
  }

  depends_on = [
    google_project_service.apis,
    google_project_iam_member.notebook_vm,
    google_storage_bucket_iam_member.notebook_vm_reads_setup,
  ]
}

# --- who may do what --------------------------------------------------------------------------------
# Participants: see their own notebook (to open it from the console) and nothing else. Starting,
# stopping or resetting it goes through notebook-medic (/restart-notebook), which checks ownership:
# IAM can't say "reset only your own" at project level, and per-instance reset rights would not let
# the bot record the restart in the instance's history.
resource "google_workbench_instance_iam_member" "owner_views_own" {
  for_each = local.participants

  location = var.zone
  name     = google_workbench_instance.participant[each.key].name
  role     = "roles/notebooks.viewer"
  member   = "user:${lower(each.value.owner_email)}"
}

# Workbench requires it: in single-user mode, an owner who is not the instance's creator (Terraform's
# identity is) needs roles/iam.serviceAccountUser on the instance's service account ("Manage access to an
# instance's JupyterLab interface", Single user only). The notebook's code runs as that account anyway, so
# acting as it adds no reach beyond what it holds: logs, metrics, the setup script (docs/security.md).
resource "google_service_account_iam_member" "owners_act_as_vm" {
  for_each = local.participants

  service_account_id = google_service_account.notebook_vm.name
  role               = "roles/iam.serviceAccountUser"
  member             = "user:${lower(each.value.owner_email)}"
}

# Organizers: administer every notebook (create, reset, change machine types) and read the logs.
resource "google_project_iam_member" "organizers" {
  for_each = {
    for pair in setproduct(var.organizers, ["roles/notebooks.admin", "roles/logging.viewer", "roles/monitoring.viewer"]) :
    "${pair[0]} ${pair[1]}" => { member = pair[0], role = pair[1] }
  }

  project = var.project_id
  role    = each.value.role
  member  = each.value.member
}

resource "google_service_account_iam_member" "organizers_act_as_vm" {
  for_each = toset(var.organizers)

  service_account_id = google_service_account.notebook_vm.name
  role               = "roles/iam.serviceAccountUser"
  member             = each.value
}
