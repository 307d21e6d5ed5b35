# notebook-medic: everything the bot needs, in one Google Cloud project, owned by this one root module.
# Apply from here (README.md in this folder, or cloudbuild.yaml); never deploy the functions with gcloud as well.

terraform {
  required_version = ">= 1.11.4" # the one version it is checked with (tests/infra/test_docs.py)

  required_providers {
    google = {
      source = "hashicorp/google"
      # tests/infra/provider_schema.json was extracted from 6.50.0 (scripts/extract_provider_schema.py).
      version = "~> 6.50"
    }
    # google_project_service_identity (service_agents.tf) exists only in google-beta in 6.x.
    google-beta = {
      source  = "hashicorp/google-beta"
      version = "~> 6.50"
    }
    # time_sleep: the waits Google's own modules use where an API is eventually consistent.
    time = {
      source  = "hashicorp/time"
      version = "~> 0.13"
    }
  }

  # State lives in a GCS bucket created once, out of band (README step 2), so that every apply —
  # a person's or Cloud Build's — sees the same state:
  #   terraform init -backend-config="bucket=STATE_BUCKET" -backend-config="prefix=notebook-medic"
  backend "gcs" {}
}

provider "google" {
  project = var.project_id
  region  = var.region

  default_labels = merge(var.labels, { app = "notebook-medic" })
}

provider "google-beta" {
  project = var.project_id
  region  = var.region

  default_labels = merge(var.labels, { app = "notebook-medic" })
}

# Needs cloudresourcemanager.googleapis.com, enabled before the first apply (README step 1).
data "google_project" "this" {
  project_id = var.project_id
}
