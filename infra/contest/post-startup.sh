#!/bin/bash
# notebook-medic: what every contest notebook runs at each start (Workbench's post-startup script).
#
# infra/contest/main.tf uploads this script, install-ops-agent.sh and the guard (guard/*) to the contest's setup
# bucket and names this script in the metadata `post-startup-script`, behaviour download_and_run_every_start:
# Workbench downloads and runs it at every start, after its own startup scripts (so after JupyterLab started),
# and again after an upgrade, which replaces the boot disk. Two switches, instance metadata set by Terraform:
#   notebook-medic-ops-agent  "on": install-ops-agent.sh (the Ops Agent ships the kernel's OOM lines)
#   notebook-medic-guard      "on": guard/install.sh (an OOM kill costs one kernel, never the notebook);
#                             "off": guard/install.sh --remove (undoes what an earlier start applied)
# (the bot reads notebook-medic-guard too: on a guarded notebook it waits for the guard's restart before a reset)
# The other files come from the bucket this script was downloaded from (the metadata names it), through the
# Cloud Storage JSON API with the VM account's token from the metadata server: no gsutil or gcloud needed.
set -euo pipefail

METADATA="${NOTEBOOK_MEDIC_METADATA_URL:-http://metadata.google.internal/computeMetadata/v1}"
STORAGE="${NOTEBOOK_MEDIC_STORAGE_URL:-https://storage.googleapis.com}"

log() { echo "notebook-medic-setup: $*"; }
metadata() { curl --silent --fail --max-time 10 -H "Metadata-Flavor: Google" "$METADATA/$1" || true; }

self="$(metadata instance/attributes/post-startup-script)"
if [[ ! "$self" =~ ^gs://([^/]+)/ ]]; then
  log "cannot: the metadata post-startup-script ($self) names no gs:// bucket"
  exit 1
fi
bucket="${BASH_REMATCH[1]}"
token="$(metadata instance/service-accounts/default/token | python3 -c 'import json, sys; print(json.load(sys.stdin)["access_token"])')"

# Downloads object $1 of the bucket to file $2.
fetch() {
  local object
  object="$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1")"
  curl --silent --show-error --fail --retry 5 --max-time 60 -H "Authorization: Bearer $token" \
    -o "$2" "$STORAGE/storage/v1/b/$bucket/o/$object?alt=media"
}

workdir="$(mktemp -d)"
trap 'rm -rf "$workdir"' EXIT

if [[ "$(metadata instance/attributes/notebook-medic-ops-agent)" == "on" ]]; then
  fetch install-ops-agent.sh "$workdir/install-ops-agent.sh"
  bash "$workdir/install-ops-agent.sh"
  log "Ops Agent checked"
fi

guard="$(metadata instance/attributes/notebook-medic-guard)"
if [[ "$guard" == "on" || "$guard" == "off" ]]; then
  mkdir -p "$workdir/guard"
  listing="$(curl --silent --show-error --fail --retry 5 --max-time 60 -H "Authorization: Bearer $token" \
    "$STORAGE/storage/v1/b/$bucket/o?prefix=guard/")"
  for object in $(python3 -c 'import json, sys; print("\n".join(i["name"] for i in json.load(sys.stdin).get("items", [])))' <<< "$listing"); do
    fetch "$object" "$workdir/guard/${object#guard/}"
  done
  chmod +x "$workdir/guard/install.sh"
  if [[ "$guard" == "on" ]]; then
    "$workdir/guard/install.sh"
  else
    "$workdir/guard/install.sh" --remove
  fi
fi
