output "notebooks" {
  description = "Each participant's notebook: owner and the JupyterLab URL to send them."
  value = {
    for name, instance in google_workbench_instance.participant : name => {
      owner     = lower(local.participants[name].owner_email)
      proxy_uri = instance.proxy_uri
    }
  }
}

output "zone" {
  description = "Put this zone in the bot's zones variable (WORKBENCH_ZONES)."
  value       = var.zone
}

output "notebook_service_account" {
  description = "The notebooks' VM identity: logs and metrics only; never grant it the contest's data (every participant may act as it)."
  value       = google_service_account.notebook_vm.email
}
