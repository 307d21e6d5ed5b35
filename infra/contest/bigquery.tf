# The contest's data in BigQuery, with seed 000's permission model (infra/README.md, "The contest's data"):
# two Google Groups, so that adding or removing a person is a group change and never a Terraform one.
#   - both groups: run query jobs, create datasets of their own, read the training and test-features datasets;
#   - the test labels: the organizers' group (and a scoring identity, if one is given) only.
# Project-level IAM cannot say "every dataset but the labels", so reading is granted per dataset (its access
# list, which these resources own: an entry added by hand is removed at the next apply).
#
# Queries in a notebook run as the participant: the notebooks' VM account (main.tf) gets no BigQuery right at
# all, because every participant may act as it (Workbench's single-user mode needs that) and every notebook
# runs as it: whatever it could read, every participant could.
#
# Optional: leave `bigquery` unset (null) for a contest without BigQuery, and nothing here is created.

variable "bigquery" {
  description = "The contest's BigQuery datasets and the two groups; null (the default) creates nothing of bigquery.tf. Dataset IDs: letters, digits, underscores; the groups are Google Group emails."
  type = object({
    location              = string
    training_dataset      = string
    test_features_dataset = string
    test_labels_dataset   = string
    participants_group    = string
    organizers_group      = string
    # A service account that scores submissions (reads the labels); "" when organizers score by hand.
    scoring_service_account = optional(string, "")
  })
  default = null

  validation {
    condition = var.bigquery == null ? true : alltrue([
      for id in [var.bigquery.training_dataset, var.bigquery.test_features_dataset, var.bigquery.test_labels_dataset] :
      can(regex("^[A-Za-z0-9_]{1,1024}$", id))
    ])
    error_message = "bigquery: dataset IDs are 1-1024 letters, digits or underscores."
  }
  validation {
    condition = var.bigquery == null ? true : alltrue([
      for email in [var.bigquery.participants_group, var.bigquery.organizers_group] :
      can(regex("^[^@\\s:]+@[^@\\s]+\\.[^@\\s]+$", email))
    ])
    error_message = "bigquery: participants_group and organizers_group are Google Group emails (no group: prefix)."
  }
  validation {
    condition     = var.bigquery == null ? true : var.bigquery.participants_group != var.bigquery.organizers_group
    error_message = "bigquery: the participants' group must not be the organizers' group (it would read the labels)."
  }
  validation {
    condition     = var.bigquery == null ? true : can(regex("^$|^[a-z][a-z0-9-]{4,28}[a-z0-9]@[a-z0-9-]+\\.iam\\.gserviceaccount\\.com$", var.bigquery.scoring_service_account))
    error_message = "bigquery: scoring_service_account is a service account email or \"\"."
  }
}

locals {
  bigquery        = var.bigquery == null ? {} : { contest = var.bigquery }
  bigquery_labels = var.bigquery == null ? {} : { test_labels = var.bigquery }
  # Readable by both groups; the labels dataset is not in this map.
  bigquery_shared = var.bigquery == null ? {} : {
    training      = var.bigquery.training_dataset
    test_features = var.bigquery.test_features_dataset
  }
  bigquery_groups = var.bigquery == null ? {} : {
    participants = "group:${var.bigquery.participants_group}"
    organizers   = "group:${var.bigquery.organizers_group}"
  }
  # Project level: query jobs, and the custom role below (creating a dataset makes its creator its OWNER).
  bigquery_project_grants = {
    for pair in setproduct(keys(local.bigquery_groups), ["jobs", "datasets"]) : "${pair[0]} ${pair[1]}" => {
      member = local.bigquery_groups[pair[0]]
      role   = pair[1] == "jobs" ? "roles/bigquery.jobUser" : google_project_iam_custom_role.dataset_creator["contest"].id
    }
  }
}

# bigquery.datasets.create and nothing else. roles/bigquery.user would also give bigquery.datasets.get and
# bigquery.tables.list on every dataset (the labels' table names included) and roles/bigquery.dataEditor at
# project level reads every table: neither is needed to create datasets of one's own.
resource "google_project_iam_custom_role" "dataset_creator" {
  for_each = local.bigquery

  role_id     = "${replace(var.contest_name, "-", "_")}_datasetCreator"
  title       = "${var.contest_name}: create BigQuery datasets"
  description = "Create datasets of one's own (the creator becomes the dataset's OWNER); reads nothing else."
  permissions = ["bigquery.datasets.create"]

  depends_on = [google_project_service.apis]
}

resource "google_project_iam_member" "bigquery_groups" {
  for_each = local.bigquery_project_grants

  project = var.project_id
  role    = each.value.role
  member  = each.value.member
}

# Training data and test features: the organizers own them (they load the tables), both groups read.
resource "google_bigquery_dataset" "shared" {
  #checkov:skip=CKV_GCP_81:The contest's published data; Google-managed encryption instead of a per-project KMS key.
  for_each = local.bigquery_shared

  dataset_id  = each.value
  location    = var.bigquery.location
  description = "${var.contest_name}: ${replace(each.key, "_", " ")} (read by participants and organizers)"

  access {
    role           = "OWNER"
    group_by_email = var.bigquery.organizers_group
  }
  access {
    role           = "READER"
    group_by_email = var.bigquery.participants_group
  }

  depends_on = [google_project_service.apis]
}

# The test set's target values: the organizers' group and the scoring identity only. No special group
# (projectReaders/Writers/Owners), so no project-level basic role reaches it through the dataset either.
resource "google_bigquery_dataset" "test_labels" {
  #checkov:skip=CKV_GCP_81:Google-managed encryption; who may read is the access list below.
  for_each = local.bigquery_labels

  dataset_id  = each.value.test_labels_dataset
  location    = each.value.location
  description = "${var.contest_name}: test labels (organizers and the scoring identity only)"

  access {
    role           = "OWNER"
    group_by_email = each.value.organizers_group
  }
  dynamic "access" {
    for_each = each.value.scoring_service_account != "" ? [each.value.scoring_service_account] : []
    content {
      role          = "READER"
      user_by_email = access.value
    }
  }

  depends_on = [google_project_service.apis]
}

output "bigquery_datasets" {
  description = "The contest's datasets (empty without BigQuery): the labels one must answer \"Access Denied\" to a participant (infra/README.md)."
  value = {
    for key, dataset in merge(google_bigquery_dataset.shared, google_bigquery_dataset.test_labels) :
    key => dataset.id
  }
}
