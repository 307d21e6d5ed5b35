"""The Slack simulator's faults: what a test injects (rate limits, 5xx, hangs, API errors) and how a request
takes one."""

from __future__ import annotations

from simulators.slack import model
from simulators.slack.model import FAULT_KINDS, RESPONSE_URL_METHOD, ApiCall, _Fault, _Reply
from simulators.slack.state import SlackState


class FaultyState(SlackState):
    def inject_fault(
        self,
        method: str,
        kind: str,
        count: int = 1,
        *,
        retry_after_s: int = 1,
        error: str = "",
    ) -> None:
        """Make the next ``count`` requests to ``method`` fail.

        ``method``: a Web API method name, ``"*"`` for every Web API method, or
        ``"response_url"`` for posts to any response_url (``"*"`` does not cover those).
        ``kind``:
          * ``ratelimit``: HTTP 429, ``Retry-After: retry_after_s``, ``{"ok": false,
            "error": "ratelimited"}`` (plain text ``rate_limited`` for response_url);
          * ``server_error``: HTTP 500 with a non-JSON (HTML) body, as a proxy error page;
          * ``timeout``: hold the request for 30 s (stop() cuts it short), then serve it;
          * ``error``: HTTP 200 ``{"ok": false, "error": error}`` (for response_url:
            HTTP 400 with ``error`` as the plain text body).
        Faults on a specific method are used before ``"*"`` faults.
        """
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; expected one of {FAULT_KINDS}")
        if kind == "error" and not error:
            raise ValueError("fault kind 'error' needs error=..., e.g. error='fatal_error'")
        if count < 1:
            raise ValueError("count must be >= 1")
        with self._lock:
            self._faults.append(_Fault(method, kind, count, retry_after_s, error))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()


    def _faulted(self, method: str, call: ApiCall, *, threaded: bool = True) -> _Reply | None:
        """The injected fault's answer to this request, or None to serve it. A `timeout` holds it first (in
        process, `threaded=False`, nothing waits: it is marked held and served at once, as the late copy it is)."""
        is_api = method != RESPONSE_URL_METHOD
        with self._lock:
            candidates = [f for f in self._faults if f.remaining > 0 and f.method == method]
            if not candidates and is_api:
                candidates = [f for f in self._faults if f.remaining > 0 and f.method == "*"]
            if not candidates:
                return None
            fault = candidates[0]
            fault.remaining -= 1
            self._faults = [f for f in self._faults if f.remaining > 0]
        if fault.kind == "timeout":
            call.held = True
            if threaded and self._stopping.wait(model.TIMEOUT_FAULT_S):  # read at each hold: tests set it there
                return _Reply.text(503, "stopping")
            return None  # served late, normally
        if fault.kind == "ratelimit":
            headers = {"Retry-After": str(fault.retry_after_s)}
            if is_api:
                return _Reply.json(429, {"ok": False, "error": "ratelimited"}, headers)
            return _Reply.text(429, "rate_limited", headers)
        if fault.kind == "server_error":
            html = "<html><body><h1>500 Internal Server Error</h1></body></html>"
            return _Reply(500, html.encode(), "text/html; charset=utf-8")
        if is_api:
            return _Reply.json(200, {"ok": False, "error": fault.error})
        return _Reply.text(400, fault.error)

