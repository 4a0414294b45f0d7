"""What the fake API servers share: a record of the requests and scripted failures."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ScriptedFailures:
    """``failures`` are ``(status, headers)`` answers given, in order, once ``fail_from_page``
    pages were served; every request's arguments are kept in ``requests`` (a failed one with its
    ``status``; tests may append ``{"slept": seconds}`` markers too)."""

    failures: list[tuple[int, dict]] = field(default_factory=list)
    requests: list[dict] = field(default_factory=list)
    fail_from_page: int = 0

    def next_failure(self, args: dict) -> tuple[int, dict] | None:
        self.requests.append(args)
        served = sum(1 for r in self.requests[:-1] if "status" not in r and "slept" not in r)
        if not self.failures or served < self.fail_from_page:
            return None
        status, headers = self.failures.pop(0)
        args["status"] = status
        return status, headers
