variable "project_id" {
  description = "The project that holds the notebooks (the same project as the bot, so its log sink sees their OOM kills)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a project ID (6-30 lowercase letters, digits and hyphens)."
  }
}

variable "zone" {
  description = "Zone of every notebook; list it in the bot's zones variable."
  type        = string
  default     = "us-central1-a"

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+-[a-z]$", var.zone))
    error_message = "zone must look like us-central1-a."
  }
}

variable "contest_name" {
  description = "Short name of the contest: a label on every notebook and the prefix of the VM service account."
  type        = string
  default     = "contest"

  # At most 20: the VM service account is "<contest_name>-notebooks" and an account id has at most
  # 30 characters (tests/infra/test_fresh_project.py checks every name built from an input).
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,18}[a-z0-9]$", var.contest_name))
    error_message = "contest_name must be 3-20 lowercase letters, digits or hyphens, starting with a letter and not ending with a hyphen (the VM service account <contest_name>-notebooks has at most 30 characters)."
  }
}

variable "participants_csv" {
  description = "CSV with the header name,owner_email,machine_type and one row per participant (see participants.example.csv)."
  type        = string
  default     = "participants.csv"
}

variable "organizers" {
  description = "IAM principals of the organizers, e.g. [\"group:contest-organizers@example.com\"]: they administer every notebook."
  type        = list(string)

  validation {
    condition     = length(var.organizers) > 0 && alltrue([for o in var.organizers : can(regex("^(group|user):[^@\\s]+@[^@\\s]+$", o))])
    error_message = "organizers must be group:EMAIL or user:EMAIL principals."
  }
}

variable "boot_disk_size_gb" {
  description = "Boot disk of each notebook, in GB."
  type        = number
  default     = 150

  validation {
    condition     = var.boot_disk_size_gb >= 150 && var.boot_disk_size_gb <= 4000
    error_message = "boot_disk_size_gb must be between 150 (Workbench's minimum) and 4000."
  }
}

variable "disable_public_ip" {
  description = "Give the notebooks no external IP. Keep false unless the network has Cloud NAT: participants need to pip install."
  type        = bool
  default     = false
}

variable "network" {
  description = "Optional VPC network self link or name for the notebooks; empty uses Workbench's default (the default network)."
  type        = string
  default     = ""
}

variable "subnet" {
  description = "Optional subnetwork self link for the notebooks (with network)."
  type        = string
  default     = ""
}

variable "install_ops_agent" {
  description = "Install the Ops Agent on every notebook (a post-startup script, install-ops-agent.sh): syslog (OOM lines) to Cloud Logging and the memory metric for the bot's early warnings and its no-memory-reports alert. Its host metrics are billed by Cloud Monitoring (infra/README.md, cost); without it, OOM lines still arrive through serial-port logging where Workbench enables it, but memory warnings don't."
  type        = bool
  default     = true
}

variable "install_guard" {
  description = "Install notebook-medic's guard in every notebook (guard/install.sh, at every start): a kernel's OOM kill costs that kernel only (OOMPolicy=continue, kernels the OOM killer's first choice), a server that dies anyway is restarted by systemd in seconds, and the guard's state is readable by make doctor (guest attributes). false removes it at each notebook's next start; the bot's VM reset stays the fallback either way."
  type        = bool
  default     = true
}
