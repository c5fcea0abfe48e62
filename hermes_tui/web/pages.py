"""The one dashboard page; everything on it is filled in by static/app.js from the API."""

from __future__ import annotations

from flask import Blueprint, render_template

from hermes_tui.web import commands

bp = Blueprint("pages", __name__)


@bp.get("/")
def index() -> str:
    return render_template("index.html", commands=commands.COMMANDS, keys=commands.KEYS)
