"""gunicorn entry points. Prefer ``hermes-web``, which picks safe gunicorn settings.

If you run gunicorn yourself, keep one worker and serve ``asgi`` (the Flask app behind the bridge that
keeps slow clients off the threads) with Hermes' worker class:
``gunicorn -w 1 -k hermes_tui.web.serve.Worker -b 127.0.0.1:8000 wsgi:asgi`` (see README.md,
"Web dashboard"). ``app`` is the bare Flask app for other WSGI servers, without that protection.
A missing or weak FLASK_SECRET_KEY or HERMES_WEB_PASSWORD stops gunicorn with one line naming it.
"""

from gunicorn.errors import AppImportError

from hermes_tui.config import Config, ConfigError
from hermes_tui.logs import setup_logging
from hermes_tui.redaction import withhold_from_environment
from hermes_tui.web.serve import DEFAULT_THREADS, build

withhold_from_environment()  # no child of the server ever inherits a key; Config.load still sees them
try:
    config = Config.load()
    asgi = build(config, DEFAULT_THREADS)
except ConfigError as exc:
    # gunicorn prints an AppImportError's message alone and halts, instead of re-spawning workers.
    raise AppImportError(f"hermes-web: {exc}") from None
app = asgi.app
setup_logging(config)
