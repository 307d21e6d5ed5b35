# Inputs. Each one becomes part of the functions' environment (see locals.tf) or of the
# infrastructure around them; shared/adapters/config.py checks the same values again at start-up.

variable "project_id" {
  description = "The Google Cloud project that holds the bot and the contest's Workbench instances."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a project ID (6-30 lowercase letters, digits and hyphens), not a name or number."
  }
}

variable "region" {
  description = "Region of the functions, the source bucket and the Pub/Sub trigger (e.g. us-central1, asia-northeast1)."
  type        = string
  default     = "us-central1"

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.region))
    error_message = "region must look like us-central1 or asia-northeast1."
  }
}

variable "zones" {
  description = "Zones whose Workbench instances the Slack command lists (WORKBENCH_ZONES); the contest module's zone."
  type        = list(string)

  validation {
    condition     = length(var.zones) > 0 && alltrue([for z in var.zones : can(regex("^[a-z]+-[a-z]+[0-9]+-[a-z]$", z))])
    error_message = "zones must be a non-empty list of zones such as us-central1-a."
  }
}

variable "name_prefix" {
  description = "Prefix of every resource name this module creates (functions, topics, service accounts...)."
  type        = string
  default     = "notebook-medic"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{2,13}$", var.name_prefix))
    error_message = "name_prefix must be 3-14 lowercase letters, digits or hyphens, starting with a letter (service account IDs are at most 30 characters)."
  }
}

variable "slack_alert_channel" {
  description = "ID of the Slack channel where organizers get OOM alerts and restart reports (SLACK_ALERT_CHANNEL), e.g. C0123456789. Invite the bot to it."
  type        = string

  validation {
    condition     = can(regex("^[CG][A-Z0-9]{6,}$", var.slack_alert_channel))
    error_message = "slack_alert_channel must be a channel ID (C... or G...), not a #name: Slack shows it under the channel's details."
  }
}

variable "organizer_emails" {
  description = "Organizers (ORGANIZER_EMAILS): they may restart any instance and use the alert buttons; they also receive the dead-letter alert by email."
  type        = list(string)

  validation {
    condition     = length(var.organizer_emails) > 0 && alltrue([for e in var.organizer_emails : can(regex("^[^@\\s,]+@[^@\\s,]+\\.[^@\\s,]+$", e))])
    error_message = "organizer_emails must be a non-empty list of email addresses."
  }
}

variable "organizer_usergroup" {
  description = "Optional Slack user group ID (S...) whose members also count as organizers (ORGANIZER_USERGROUP; needs the usergroups:read scope)."
  type        = string
  default     = ""

  validation {
    condition     = var.organizer_usergroup == "" || can(regex("^S[A-Z0-9]{6,}$", var.organizer_usergroup))
    error_message = "organizer_usergroup must be empty or a user group ID (S...)."
  }
}

variable "restart_policy" {
  description = "RESTART_POLICY: when-unhealthy resets only when Jupyter stays down after an OOM kill; always resets after every kill."
  type        = string
  default     = "when-unhealthy"

  validation {
    condition     = contains(["when-unhealthy", "always"], var.restart_policy)
    error_message = "restart_policy must be when-unhealthy or always."
  }
}

variable "automatic_actions" {
  description = "The off switch. false disables the OOM log sink (no kill reaches the bot, so nothing is restarted automatically) and the memory-pressure alert (no warnings); /restart-notebook and the alert buttons keep working. `terraform apply -var automatic_actions=false` switches off, `=true` back on."
  type        = bool
  default     = true
}

variable "dry_run" {
  description = "DRY_RUN: decide and report, but never reset or stop an instance. Useful for a rehearsal before the contest."
  type        = bool
  default     = false
}

variable "owner_dm" {
  description = "OWNER_DM: also tell a notebook's owner by direct message when it is restarted."
  type        = bool
  default     = true
}

variable "message_language" {
  description = "MESSAGE_LANGUAGE of every message the bot writes: en or ja."
  type        = string
  default     = "en"

  validation {
    condition     = contains(["en", "ja"], var.message_language)
    error_message = "message_language must be en or ja."
  }
}

variable "display_timezone" {
  description = "DISPLAY_TIMEZONE: IANA time zone for the times the bot shows (e.g. Asia/Tokyo)."
  type        = string
  default     = "UTC"

  validation {
    condition     = can(regex("^(UTC|[A-Z][A-Za-z_]+(/[A-Z][A-Za-z0-9_+-]+){1,2})$", var.display_timezone))
    error_message = "display_timezone must be UTC or an IANA name such as Asia/Tokyo or America/Argentina/Buenos_Aires."
  }
}

variable "contest_start" {
  description = "CONTEST_START: when the contest begins (RFC 3339, e.g. 2026-12-01T00:00:00Z), as infra/contest's contest_start. With contest_end, a notebook stopped inside the window needs attention in the Home tab; null: no window."
  type        = string
  default     = null

  validation {
    condition     = var.contest_start == null || can(timeadd(var.contest_start, "0s"))
    error_message = "contest_start must be an RFC 3339 timestamp, like 2026-12-01T09:00:00Z."
  }
}

variable "contest_end" {
  description = "CONTEST_END: when the contest ends (RFC 3339), as infra/contest's contest_end; null: no window."
  type        = string
  default     = null

  validation {
    condition     = var.contest_end == null || can(timeadd(var.contest_end, "0s"))
    error_message = "contest_end must be an RFC 3339 timestamp, like 2026-12-01T09:00:00Z."
  }

  validation {
    condition     = var.contest_start == null || var.contest_end == null ? true : timecmp(var.contest_start, var.contest_end) < 0
    error_message = "contest_start must be before contest_end."
  }
}

variable "max_event_age_seconds" {
  description = "MAX_EVENT_AGE_SECONDS: OOM events and restart requests older than this are dropped instead of acted on (redeliveries stop mattering)."
  type        = number
  default     = 3600

  # At most 23 h: Eventarc retries a kill and the restart subscription keeps a request for 24 h. An
  # event must reach this age, and be dropped with its logged ERROR (the dropped-kills alert fires at half of it),
  # while a delivery (backoff up to 10 min) can still happen, never expire silently before it.
  validation {
    condition     = var.max_event_age_seconds >= 300 && var.max_event_age_seconds <= 82800
    error_message = "max_event_age_seconds must be between 300 and 82800 (23 h): older than Eventarc's and the restart subscription's 24 h, an event would vanish without the alert."
  }
}

variable "manual_restart_interval_seconds" {
  description = "MANUAL_RESTART_INTERVAL_SECONDS: how often one participant may restart the same instance from Slack."
  type        = number
  default     = 60

  validation {
    condition     = var.manual_restart_interval_seconds >= 0 && var.manual_restart_interval_seconds <= 3600
    error_message = "manual_restart_interval_seconds must be between 0 and 3600."
  }
}

variable "extra_environment" {
  description = "Further tunables of shared/adapters/config.py, same for every function (e.g. { CRASHLOOP_LIMIT = \"3\" }). Secrets never go here."
  type        = map(string)
  default     = {}

  validation {
    condition = alltrue([for k in keys(var.extra_environment) : contains([
      "HEALTH_GRACE_SECONDS", "HEALTH_POLL_SECONDS", "HEALTH_SETTLE_SECONDS", "INCIDENT_COOLDOWN_SECONDS",
      "BACKOFF_INITIAL_SECONDS", "BACKOFF_CAP_SECONDS", "CRASHLOOP_LIMIT", "CRASHLOOP_WINDOW_SECONDS",
      "CRASHLOOP_RESET_AFTER_SECONDS", "SLACK_TIMEOUT_SECONDS", "WORKBENCH_TIMEOUT_SECONDS",
      "WORKBENCH_RETRY_SECONDS", "SLOW_RESTART_ALERT_SECONDS", "CONSOLE_URL",
      "MACHINE_LADDER", "MACHINE_PRICES", "RESIZE_SUGGEST_KILLS", "MEMORY_WARNING_QUIET_SECONDS",
      "ALERT_GROUP_WINDOW_SECONDS", "ALERT_DAILY_LIMIT", "GUARD_RESTART_WAIT_SECONDS", "MEMORY_CHARTS",
      "SLACK_ACK_BUDGET_SECONDS", "SLACK_READS_SECONDS", "SLACK_PUBLISH_SECONDS", "SLACK_REPLY_SECONDS",
      "SLACK_APP_CALL_SECONDS", "SLACK_ANSWER_RETRY_SECONDS", "HOME_MEMORY_SECONDS", "HOME_FLEET_TTL_SECONDS",
      "HOME_OPENS_PER_MINUTE", "HEALTH_SILENT_SECONDS", "TICKETS_PER_HOUR", "TICKET_REPOST_SECONDS",
      "TICKET_ESCALATE_SECONDS", "TICKET_REMIND_SECONDS", "TICKET_ESCALATE_TO", "STOCKOUT_PATIENCE_SECONDS",
      "SWEEP_EVIDENCE_READS", "SWEEP_EVIDENCE_PER_MINUTE", "DISK_FULL_PERCENT", "TOLD_QUIET_SECONDS",
      "HEARTBEAT_SILENT_SECONDS",
      "MAX_DISK_GB", "DISK_ASKS_PER_DAY", "DISK_PRICES", "DISK_GROWTH_WAIT_SECONDS",
    ], k)])
    error_message = "extra_environment may only set tunables of shared/adapters/config.py (HEALTH_GRACE_SECONDS, CRASHLOOP_LIMIT, MACHINE_LADDER, ...); the others have their own variables."
  }
}

variable "slack_min_instances" {
  description = "Minimum instances of the Slack function. 1 keeps Slack's 3-second acknowledgement safe from cold starts (billed while idle, see README); 0 outside contest days."
  type        = number
  default     = 1

  validation {
    condition     = var.slack_min_instances >= 0 && var.slack_min_instances <= 3
    error_message = "slack_min_instances must be 0, 1, 2 or 3."
  }
}

variable "worker_max_instances" {
  description = "Maximum instances of the restart worker: how many instances it can restart at the same time (one request per instance)."
  type        = number
  default     = 20

  validation {
    condition     = var.worker_max_instances >= 1 && var.worker_max_instances <= 100
    error_message = "worker_max_instances must be between 1 and 100."
  }
}

variable "dead_letter_max_delivery_attempts" {
  description = "Deliveries of one restart request before it is moved to the dead-letter topic (and organizers are alerted)."
  type        = number
  default     = 20

  validation {
    condition     = var.dead_letter_max_delivery_attempts >= 5 && var.dead_letter_max_delivery_attempts <= 100
    error_message = "dead_letter_max_delivery_attempts must be between 5 and 100 (Pub/Sub's limits)."
  }
}

variable "private_ingress" {
  description = "Ingress of the two functions only Google calls (on_oom from Eventarc, restart_worker from Pub/Sub push). Both also require an authenticated caller; ALLOW_ALL is the fallback if internal-only ingress ever blocks the push."
  type        = string
  default     = "ALLOW_INTERNAL_ONLY"

  validation {
    condition     = contains(["ALLOW_INTERNAL_ONLY", "ALLOW_ALL"], var.private_ingress)
    error_message = "private_ingress must be ALLOW_INTERNAL_ONLY or ALLOW_ALL."
  }
}

variable "extra_notification_channels" {
  description = "Existing Cloud Monitoring notification channels (projects/P/notificationChannels/N, e.g. a Slack or PagerDuty channel) for the dead-letter alert, besides the organizers' emails."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.extra_notification_channels : can(regex("^projects/[^/]+/notificationChannels/[0-9]+$", c))])
    error_message = "extra_notification_channels entries must be full names: projects/PROJECT/notificationChannels/ID."
  }
}

variable "dist_dir" {
  description = "Folder holding the zips `make package` builds (<function>.zip). Empty means ../dist next to this folder."
  type        = string
  default     = ""
}

variable "labels" {
  description = "Labels added to every resource that takes labels (the provider's default_labels)."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for k, v in var.labels : can(regex("^[a-z][a-z0-9_-]{0,62}$", k)) && can(regex("^[a-z0-9_-]{0,63}$", v))])
    error_message = "labels keys and values must be lowercase letters, digits, _ or - (keys start with a letter)."
  }
}

variable "memory_alert_percent" {
  description = "Memory used (percent, Ops Agent metric) above which a notebook's owner is warned before the OOM killer acts."
  type        = number
  default     = 90

  validation {
    condition     = var.memory_alert_percent >= 50 && var.memory_alert_percent <= 99
    error_message = "memory_alert_percent must be between 50 and 99."
  }
}

variable "memory_alert_duration_seconds" {
  description = "How long memory must stay above memory_alert_percent before the warning (multiple of 60)."
  type        = number
  default     = 120

  validation {
    condition     = var.memory_alert_duration_seconds >= 60 && var.memory_alert_duration_seconds <= 3600 && var.memory_alert_duration_seconds % 60 == 0
    error_message = "memory_alert_duration_seconds must be a multiple of 60 between 60 and 3600."
  }
}

variable "disk_alert_percent" {
  description = "Disk used (percent of a notebook's boot or data disk, Ops Agent metric) above which its owner is warned with what fills it (issue 43)."
  type        = number
  default     = 90

  validation {
    condition     = var.disk_alert_percent >= 50 && var.disk_alert_percent <= 99
    error_message = "disk_alert_percent must be between 50 and 99."
  }
}

variable "disk_alert_duration_seconds" {
  description = "How long a disk must stay above disk_alert_percent before the warning (multiple of 60)."
  type        = number
  default     = 300

  validation {
    condition     = var.disk_alert_duration_seconds >= 60 && var.disk_alert_duration_seconds <= 3600 && var.disk_alert_duration_seconds % 60 == 0
    error_message = "disk_alert_duration_seconds must be a multiple of 60 between 60 and 3600."
  }
}

variable "gpu_alert_percent" {
  description = "GPU memory used (percent of a GPU's memory, the Ops Agent's NVML metric) above which a GPU notebook's owner is warned with what holds it (issue 47)."
  type        = number
  default     = 90

  validation {
    condition     = var.gpu_alert_percent >= 50 && var.gpu_alert_percent <= 99
    error_message = "gpu_alert_percent must be between 50 and 99."
  }
}

variable "gpu_alert_duration_seconds" {
  description = "How long a GPU's memory must stay above gpu_alert_percent before the warning (multiple of 60)."
  type        = number
  default     = 120

  validation {
    condition     = var.gpu_alert_duration_seconds >= 60 && var.gpu_alert_duration_seconds <= 3600 && var.gpu_alert_duration_seconds % 60 == 0
    error_message = "gpu_alert_duration_seconds must be a multiple of 60 between 60 and 3600."
  }
}

variable "sweep_interval_minutes" {
  description = "How often the health sweep reads every notebook and queues the ones that are down (issue 42)."
  type        = number
  default     = 3

  validation {
    condition     = contains([1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30], var.sweep_interval_minutes)
    error_message = "sweep_interval_minutes must divide an hour: 1, 2, 3, 4, 5, 6, 10, 12, 15, 20 or 30."
  }
}
