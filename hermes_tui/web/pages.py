"""The one dashboard page; everything on it is filled in by static/app.js from the API."""

from __future__ import annotations

from flask import Blueprint, render_template

bp = Blueprint("pages", __name__)


@bp.get("/")
def index() -> str:
    return render_template("index.html")
