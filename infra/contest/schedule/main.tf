# The contest's schedule as data: when each Cloud Scheduler job fires (a cron line in UTC) and the JSON it
# publishes to the bot's restart topic. No provider and no resource: ../schedule.tf creates the jobs from these
# outputs, and tests/infra/test_schedule_message.py applies this module alone with the installed Terraform and
# decodes each message with shared/core/envelope.py's decode (the worker's decoder).

terraform {
  required_version = ">= 1.11.4" # the one version it is checked with (tests/infra/test_docs.py)
}

variable "contest_name" {
  description = "The contest's short name, carried in each message (the worker's log line names it)."
  type        = string
}

variable "contest_start" {
  description = "When every notebook starts, RFC 3339 in UTC (2026-12-01T00:00:00Z); null: no scheduled start."
  type        = string
  default     = null

  validation {
    condition     = var.contest_start == null || can(regex("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:00Z$", var.contest_start))
    error_message = "contest_start must be RFC 3339 in UTC to the minute, like 2026-12-01T09:00:00Z (Cloud Scheduler fires on whole minutes)."
  }
}

variable "contest_end" {
  description = "When every notebook stops, RFC 3339 in UTC; null: no scheduled stop (and no warning)."
  type        = string
  default     = null

  validation {
    condition     = var.contest_end == null || can(regex("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:00Z$", var.contest_end))
    error_message = "contest_end must be RFC 3339 in UTC to the minute, like 2026-12-01T09:00:00Z (Cloud Scheduler fires on whole minutes)."
  }
}

variable "stop_warning_minutes" {
  description = "How long before contest_end each owner is warned to save their work; 0: no warning."
  type        = number
  default     = 15

  validation {
    condition     = var.stop_warning_minutes >= 0 && var.stop_warning_minutes <= 240 && floor(var.stop_warning_minutes) == var.stop_warning_minutes
    error_message = "stop_warning_minutes must be a whole number of minutes from 0 to 240."
  }
}

variable "include_opted_out" {
  description = "Whether the scheduled start and stop also act on notebooks labelled medic-auto=off."
  type        = bool
  default     = false
}

variable "include_paused" {
  description = "Whether the scheduled start and stop also act on notebooks whose automatic restarts are paused."
  type        = bool
  default     = false
}

locals {
  # shared/core/envelope.py: the restart topic's one shape (WIRE_VERSION, the "schedule" type), around the
  # payload's fields as envelope.py writes a ScheduleMessage.
  envelope = {
    version = 2
    type    = "schedule"
  }
  common = {
    contest           = var.contest_name
    include_opted_out = var.include_opted_out
    include_paused    = var.include_paused
  }
  warn_at = var.contest_end == null || var.stop_warning_minutes <= 0 ? null : timeadd(var.contest_end, "-${var.stop_warning_minutes}m")

  fire_at = { for action, at in {
    "start-all" = var.contest_start
    "warn-stop" = local.warn_at
    "stop-all"  = var.contest_end
  } : action => at if at != null }

  jobs = { for action, at in local.fire_at : action => {
    # minute hour day-of-month month, any weekday, in Etc/UTC: Cloud Scheduler repeats it every year, and the
    # worker acts only on a delivery within an hour of `at` (ScheduleMessage.due).
    schedule = formatdate("m h D M *", at)
    data = jsonencode(merge(local.envelope, {
      payload = merge(local.common, {
        action  = action
        at      = at
        stop_at = action == "warn-stop" ? var.contest_end : null
      })
    }))
  } }
}

output "jobs" {
  description = "Each scheduled action (start-all, warn-stop, stop-all) that has a time: its cron line in UTC and its message."
  value       = local.jobs

  precondition {
    condition     = var.contest_start == null || var.contest_end == null ? true : timecmp(var.contest_start, var.contest_end) < 0
    error_message = "contest_start must be before contest_end."
  }
}
