"""Splash's error answers, as the render server gives them (JSON bodies with Splash's types)."""

from __future__ import annotations

from typing import Any

#: Chromium's network errors as the Qt (QNetworkReply) error numbers Splash reports
QT_ERRORS = {
    "ERR_CONNECTION_REFUSED": 1, "ERR_CONNECTION_CLOSED": 2, "ERR_CONNECTION_RESET": 2, "ERR_EMPTY_RESPONSE": 2,
    "ERR_NAME_NOT_RESOLVED": 3, "ERR_NAME_RESOLUTION_FAILED": 3, "ERR_ADDRESS_UNREACHABLE": 3,
    "ERR_TIMED_OUT": 4, "ERR_CONNECTION_TIMED_OUT": 4, "ERR_ABORTED": 5, "ERR_SSL_PROTOCOL_ERROR": 6,
    "ERR_PROXY_CONNECTION_FAILED": 101, "ERR_TUNNEL_CONNECTION_FAILED": 101,
    "ERR_PROXY_AUTH_UNSUPPORTED": 105, "ERR_PROXY_AUTH_REQUESTED": 105,
}


# --- Splash's error answers ---------------------------------------------------------------------
class SplashError(Exception):
    """An answer in Splash's error shape: {"error": status, "type", "description", "info"}."""

    status = 500
    description = "Unhandled internal error"

    def __init__(self, info: Any = None):
        super().__init__(info)
        self.info = info

    def body(self) -> dict:
        return {"error": self.status, "type": type(self).__name__, "description": self.description,
                "info": self.info}


class BadOption(SplashError):
    status, description = 400, "Incorrect HTTP API arguments"


class UnsupportedContentType(SplashError):
    status, description = 415, "Request Content-Type is not supported"


class ExpiredArguments(SplashError):
    status, description = 498, "Arguments stored with ``save_args`` are expired"


class RenderError(SplashError):
    status, description = 502, "Error rendering page"


class GlobalTimeoutError(SplashError):
    status, description = 504, "Timeout exceeded rendering page"


class InternalError(SplashError):
    status, description = 500, "Unhandled internal error"


def bad(argument: str, description: str, kind: str = "bad_argument", **extra) -> BadOption:
    """A BadOption as Splash words one: info {"type", "argument", "description", ...}."""
    return BadOption({"type": kind, "argument": argument, "description": description, **extra})
