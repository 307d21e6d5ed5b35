"""`make doctor`: checks a deployment of notebook-medic against everything the bot assumes.

Pure checks (tools.doctor.checks: functions of what was read -> CheckResult) are kept apart from the
readers (tools.doctor.readers: small adapters over the real client libraries), as in shared/.
"""
