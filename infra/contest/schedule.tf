# The contest's scheduled start, stop warning and stop: Cloud Scheduler jobs that publish one message each to the
# bot's schedule topic (infra/schedule.tf), which the worker decodes (shared/core/envelope.py: decode) and carries out as
# start all / warn every owner / stop all. Every time is optional: unset, no job is created. Changing or cancelling
# the schedule is one `terraform apply` with the new values (or with them unset). The times and messages come from
# ./schedule, a module without provider that tests/infra/test_schedule_message.py applies and decodes.
#
# Identity: a Pub/Sub target is published by Cloud Scheduler's service agent
# (service-PROJECT_NUMBER@gcp-sa-cloudscheduler.iam.gserviceaccount.com); a job has no identity of its own to
# choose for it. The agent is granted roles/pubsub.publisher on the schedule topic alone, nothing project-wide, and
# is that topic's only publisher: the worker takes schedule messages from its subscription and from nowhere else
# (issue 44 item 3: a schedule message from anything that may publish to the restart topic stopped every notebook).
# Google's note on roles/cloudscheduler.admin ("can create jobs that publish to any Pub/Sub topics within the
# project") makes the real boundary who holds cloudscheduler.jobs.create: keep it to the organizers' deployers.

variable "contest_start" {
  description = "When every notebook is started, RFC 3339 in UTC to the minute (2026-12-01T00:00:00Z); null: no scheduled start."
  type        = string
  default     = null

  # A timestamp at all; ./schedule refuses one not in UTC to the minute, and an end not after the start.
  validation {
    condition     = var.contest_start == null || can(timeadd(var.contest_start, "0s"))
    error_message = "contest_start must be an RFC 3339 timestamp, like 2026-12-01T09:00:00Z."
  }
}

variable "contest_end" {
  description = "When every notebook is stopped, RFC 3339 in UTC to the minute; null: no scheduled stop and no warning."
  type        = string
  default     = null

  # A timestamp at all; ./schedule refuses one not in UTC to the minute, and an end not after the start.
  validation {
    condition     = var.contest_end == null || can(timeadd(var.contest_end, "0s"))
    error_message = "contest_end must be an RFC 3339 timestamp, like 2026-12-01T09:00:00Z."
  }
}

variable "stop_warning_minutes" {
  description = "How long before contest_end each owner is told to save their work (\"your notebook stops at 18:00\"); 0: no warning."
  type        = number
  default     = 15

  validation {
    condition     = var.stop_warning_minutes >= 0
    error_message = "stop_warning_minutes must not be negative (./schedule also wants a whole number up to 240)."
  }
}

variable "schedule_includes_left_alone" {
  description = "Whether the scheduled start and stop also act on opted-out (medic-auto=off) and paused notebooks, which start all / stop all leave alone by default."
  type        = bool
  default     = false
}

variable "medic_schedule_topic" {
  description = "The bot's schedule topic (projects/PROJECT/topics/NAME); null: the bot's default in this project, notebook-medic-schedule."
  type        = string
  default     = null

  validation {
    condition     = var.medic_schedule_topic == null || can(regex("^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/topics/[A-Za-z][A-Za-z0-9._~+%-]{2,254}$", var.medic_schedule_topic))
    error_message = "medic_schedule_topic must be projects/PROJECT/topics/NAME."
  }
}

module "schedule" {
  source = "./schedule"

  contest_name         = var.contest_name
  contest_start        = var.contest_start
  contest_end          = var.contest_end
  stop_warning_minutes = var.stop_warning_minutes
  include_opted_out    = var.schedule_includes_left_alone
  include_paused       = var.schedule_includes_left_alone
}

locals {
  schedule_topic = coalesce(var.medic_schedule_topic, "projects/${var.project_id}/topics/notebook-medic-schedule")
  schedule_on    = length(module.schedule.jobs) > 0
}

data "google_project" "schedule" {
  count = local.schedule_on ? 1 : 0

  project_id = var.project_id
}

# cloudscheduler.googleapis.com is in main.tf's google_project_service.apis. Google creates the agent when the API
# is enabled, and IAM knows a new identity only a while later: on a fresh project a grant made at once fails with
# "does not exist". So the grant waits, as infra/service_agents.tf waits for the bot's agents (Google's own modules'
# pattern). Should it still fail, the next apply grants it (infra/README step 8 says so; make doctor's
# `schedule.publisher` line names it).
resource "time_sleep" "scheduler_agent" {
  count = local.schedule_on ? 1 : 0

  create_duration = "60s"

  depends_on = [google_project_service.apis]
}

resource "google_pubsub_topic_iam_member" "scheduler_publishes_schedule" {
  count = local.schedule_on ? 1 : 0

  project = var.project_id
  topic   = local.schedule_topic
  role    = "roles/pubsub.publisher"
  member  = "serviceAccount:service-${data.google_project.schedule[0].number}@gcp-sa-cloudscheduler.iam.gserviceaccount.com"

  depends_on = [google_project_service.apis, time_sleep.scheduler_agent]
}

resource "google_cloud_scheduler_job" "contest" {
  for_each = module.schedule.jobs

  name        = "${var.contest_name}-${each.key}"
  description = "notebook-medic: ${each.key} for contest ${var.contest_name} (infra/contest/schedule.tf)"
  project     = var.project_id
  region      = local.region
  schedule    = each.value.schedule
  time_zone   = "Etc/UTC"

  # One delivery: the worker answers a late or repeated one by its `at` (ScheduleMessage.due); Pub/Sub's own
  # redelivery covers the worker's failures.
  retry_config {
    retry_count = 0
  }

  pubsub_target {
    topic_name = local.schedule_topic
    data       = base64encode(each.value.data)
    attributes = {
      "medic-kind" = "schedule"
    }
  }

  depends_on = [google_project_service.apis, google_pubsub_topic_iam_member.scheduler_publishes_schedule]
}
