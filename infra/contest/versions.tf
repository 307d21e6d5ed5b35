# The contest's Workbench instances: one single-user notebook per participant, from participants.csv.
# A separate root from ../ (the bot): apply it for each contest, destroy it afterwards, while the bot
# stays. The bot finds these instances by zone and owner; nothing here refers to the bot.

terraform {
  required_version = ">= 1.11.4" # the one version it is checked with (tests/infra/test_docs.py)

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 6.50"
    }
    # time_sleep: the wait before the grant to Cloud Scheduler's service agent (schedule.tf), as infra/ waits.
    time = {
      source  = "hashicorp/time"
      version = "~> 0.13"
    }
  }

  #   terraform init -backend-config="bucket=STATE_BUCKET" -backend-config="prefix=contest"
  backend "gcs" {}
}

provider "google" {
  project = var.project_id

  default_labels = {
    app     = "notebook-medic-contest"
    contest = var.contest_name
  }
}
