"""What the functions run: the intakes (kills from Logging, memory alerts from Monitoring) that turn events into
requests on the restart topic, the worker that carries each request out, the resizer, and the Slack app. Each
wires the core's decisions to the adapters."""
