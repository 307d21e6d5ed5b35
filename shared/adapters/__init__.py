"""The adapters: the only code that talks to Workbench, Compute Engine, Pub/Sub, Slack, the environment and the
clock. Each wraps its client library behind a small interface of the project's own, which the app calls and the
in-process fakes of tests/fakes honour; what a library raises leaves its adapter as the project's errors
(errors.py)."""
