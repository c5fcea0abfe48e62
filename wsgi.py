"""``gunicorn wsgi:app`` entry point. Prefer ``hermes-web``, which picks safe gunicorn settings.

If you run gunicorn yourself, keep one worker and a threaded one, e.g.
``gunicorn -w 1 -k gthread --threads 8 -b 127.0.0.1:8000 wsgi:app`` (see README.md, "Web dashboard").
A missing FLASK_SECRET_KEY or HERMES_WEB_PASSWORD stops gunicorn with one line naming it.
"""

from gunicorn.errors import AppImportError

from hermes_tui.config import Config, ConfigError
from hermes_tui.logs import setup_logging
from hermes_tui.web import create_app

try:
    config = Config.load()
    app = create_app(config)
except ConfigError as exc:
    # gunicorn prints an AppImportError's message alone and halts, instead of re-spawning workers.
    raise AppImportError(f"hermes-web: {exc}") from None
setup_logging(config)
