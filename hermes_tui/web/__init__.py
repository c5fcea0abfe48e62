"""hermes-web: the password-gated Flask dashboard on the same core as the TUI.

``create_app(config=None)`` builds the app (``app.py``); ``serve.serve`` runs it under gunicorn's asyncio
worker behind ``bridge.WSGIBridge``, which hands the app only complete requests (``hermes-web``).
"""

from hermes_tui.web.app import create_app

__all__ = ["create_app"]
