"""Cloud Scheduler's `projects.locations.jobs.get`, the smallest stand-in the doctor's `sweep.job` line needs.

GET /cloudscheduler/v1/projects/P/locations/L/jobs/J answers the Job resource as the REST reference gives it
(cloud.google.com/scheduler/docs/reference/rest/v1/projects.locations.jobs, "Resource: Job": name, description,
schedule, timeZone, state one of ENABLED, PAUSED, DISABLED, UPDATE_FAILED, pubsubTarget {topicName, data},
retryConfig); a job not there is 404 NOT_FOUND in Google's error body ({"error": {"code", "message", "status"}}:
the message's words are not documented, and the doctor reads only the status). Served by RestApis
(simulators/gcp_admin.py) from CloudProject.scheduler_jobs (full job name -> Job).
"""

from __future__ import annotations

from typing import Any


def answer(jobs: dict[str, dict[str, Any]], parts: list[str]) -> tuple[int, dict[str, Any]]:
    """`parts`: the path after /cloudscheduler/v1/, split on "/"."""
    name = "/".join(parts)
    if len(parts) != 6 or parts[0] != "projects" or parts[2] != "locations" or parts[4] != "jobs" or name not in jobs:
        return 404, {"error": {"code": 404, "message": "Job not found.", "status": "NOT_FOUND"}}
    return 200, jobs[name]


def job(name: str, topic: str, schedule: str, *, state: str = "ENABLED") -> dict[str, Any]:
    """A Pub/Sub-target job as infra/sweep.tf makes it (`google_cloud_scheduler_job.sweep`)."""
    return {"name": name, "schedule": schedule, "timeZone": "Etc/UTC", "state": state,
            "pubsubTarget": {"topicName": topic, "data": "c3dlZXA="}, "retryConfig": {"retryCount": 0}}
