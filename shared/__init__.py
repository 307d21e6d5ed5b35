"""The bot's Python code, in three layers: core (pure: data in, data out), adapters (the only code that talks to
Google, Slack or the clock) and app (what the functions run, wiring the two). The arrows point one way, down;
import-linter's contracts (pyproject.toml [tool.importlinter], `make lint`) keep them so."""
