"""What every HTML page this project serves sends with it (the explorer, the tier-3 review page)."""

from __future__ import annotations

from starlette.responses import Response

__all__ = ["set_security_headers"]


def set_security_headers(response: Response, content_security_policy: str) -> None:
    """The page's own Content-Security-Policy, and headers that forbid MIME sniffing, framing,
    referrers and caching (the pages show private or live data)."""
    response.headers["Content-Security-Policy"] = content_security_policy
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
