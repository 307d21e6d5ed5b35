"""Plausible values for the environment variables Terraform sets (its variables' validations guard the real ones)."""

from __future__ import annotations

SAMPLE_VALUES = {
    "GOOGLE_CLOUD_PROJECT": "contest-prj",
    "RESTART_TOPIC": "projects/contest-prj/topics/notebook-medic-restart",
    "SLACK_ALERT_CHANNEL": "C0123456789",
    "ORGANIZER_EMAILS": "organizer@example.com",
    "ORGANIZER_USERGROUP": "",
    "WORKBENCH_ZONES": "us-central1-a",
    "RESTART_POLICY": "when-unhealthy",
    "DRY_RUN": "false",
    "OWNER_DM": "true",
    "MESSAGE_LANGUAGE": "en",
    "DISPLAY_TIMEZONE": "Asia/Tokyo",
    "CONTEST_START": "2026-12-01T00:00:00Z",
    "CONTEST_END": "2026-12-01T09:00:00Z",
    "MAX_EVENT_AGE_SECONDS": "3600",
    "MANUAL_RESTART_INTERVAL_SECONDS": "60",
    "WORKER_BUDGET_SECONDS": "420",
    "SWEEP_INTERVAL_SECONDS": "180",
    "PUSH_AUDIENCE": "https://notebook-medic-restart-worker-123456789012.us-central1.run.app",
    "PUSH_SERVICE_ACCOUNT": "notebook-medic-push@contest-prj.iam.gserviceaccount.com",
    "SCHEDULE_SUBSCRIPTION": "projects/contest-prj/subscriptions/notebook-medic-schedule-worker",
    "SLACK_BOT_TOKEN": "xoxb-0000-test",
    "SLACK_SIGNING_SECRET": "0123456789abcdef",
    "AUDIT_SEAL_KEY": "0123456789abcdef0123456789abcdef",
}
