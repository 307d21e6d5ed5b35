"""The Slack simulator's one error: a Web API method's refusal (`ok: false` with its error code), raised
by the methods and turned into Slack's answer where the request is served. It imports nothing of the simulator."""

from __future__ import annotations


class _ApiError(Exception):
    def __init__(self, error: str, detail: str | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.detail = detail


def _api_error(error: str, detail: str | None = None) -> _ApiError:
    return _ApiError(error, detail)

