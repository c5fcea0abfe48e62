"""Errors never show a traceback: JSON ``{"error": ...}`` under /api, a plain page elsewhere."""

from __future__ import annotations

import logging

from flask import Flask, Response, jsonify, render_template
from werkzeug.exceptions import HTTPException, InternalServerError

from hermes_tui.web.security import is_api

log = logging.getLogger(__name__)

_KEEP_HEADERS = ("Allow", "Retry-After")


def _respond(exc: HTTPException) -> Response:
    code = exc.code or 500
    message = exc.description or exc.name
    if is_api():
        response = jsonify(error=message)
    else:
        response = Response(render_template("error.html", code=code, name=exc.name, message=message),
                            mimetype="text/html")
    response.status_code = code
    original = exc.get_response()
    for name in _KEEP_HEADERS:
        if name in original.headers:
            response.headers[name] = original.headers[name]
    return response


def register(app: Flask) -> None:
    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        return _respond(exc)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        log.exception("unhandled error")
        return _respond(InternalServerError("internal error; see the server log"))
