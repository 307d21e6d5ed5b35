locals {
  # One row per participant: name,owner_email,machine_type. A repeated name fails the plan
  # ("duplicate object key"); every other rule is a precondition on the instance below.
  participants = { for row in csvdecode(file("${path.module}/${var.participants_csv}")) : row.name => row }

  # Instance metadata. proxy-mode/proxy-user-mail make JupyterLab single-user (only the owner gets
  # through the proxy) and are where notebook-medic reads the owner back (instance_owners is
  # input-only). The rest ships what the bot needs to see:
  #   install-monitoring-agent   installs the Ops Agent, which sends syslog (the kernel's
  #                              "Out of memory: Killed process" lines) to Cloud Logging: logs/syslog,
  #                              and the memory metric the bot's memory-pressure alert watches
  #   serial-port-logging-enable kernel messages on the serial console also reach Cloud Logging,
  #                              a second path when the agent itself is starved by the OOM
  #   enable-guest-attributes,   the health agent's report (health_state, health_info), which the
  #   report-event-health        worker reads to decide whether Jupyter came back by itself
  base_metadata = {
    "install-monitoring-agent"   = tostring(var.install_ops_agent)
    "serial-port-logging-enable" = "true"
    "enable-guest-attributes"    = "true"
    "report-event-health"        = "true"
    "proxy-mode"                 = "mail"
  }
}

resource "google_project_service" "apis" {
  for_each = toset(["compute.googleapis.com", "notebooks.googleapis.com", "logging.googleapis.com", "monitoring.googleapis.com"])

  project            = var.project_id
  service            = each.value
  disable_on_destroy = false
}

# The notebooks run as this account: it may write logs and metrics (what the Ops Agent ships) and
# nothing else. Give it read access to the contest's data separately (e.g. a BigQuery dataset).
resource "google_service_account" "notebook_vm" {
  account_id   = "${var.contest_name}-notebooks"
  display_name = "${var.contest_name}: Workbench notebooks' VM identity"
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
    metadata          = merge(local.base_metadata, { "proxy-user-mail" = lower(each.value.owner_email) })

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

  depends_on = [google_project_service.apis, google_project_iam_member.notebook_vm]
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

# The notebook's code runs as the VM account whoever opens it, so letting the owner act as it adds
# no reach beyond their own notebook; some Workbench versions check it when opening JupyterLab.
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
