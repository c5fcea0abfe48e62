"""The web API's forget endpoints, through Flask's test client on a real store."""

from __future__ import annotations

from flask import Flask

from hermes_tui.web.context import EXTENSION
from tests.web_harness import app, llm, login, make_app, web_env  # noqa: F401 - fixtures


def test_delete_session_and_purge_message_over_the_api(app: Flask) -> None:
    memory = app.extensions[EXTENSION].state.memory
    kept = memory.new_session(source="tui")
    memory.add_message(kept, "user", "remember the tangerine recipe")
    purge_id = memory.add_message(kept, "user", "my password is quokkasecret")
    gone = memory.new_session(source="tui")
    memory.add_message(gone, "user", "a private wombatmatter")
    client = app.test_client()
    token = login(client)

    assert client.delete(f"/api/sessions/{gone}").status_code == 403  # no CSRF token
    response = client.delete(f"/api/sessions/{gone}", headers={"X-CSRF-Token": token})
    assert response.status_code == 200 and response.get_json() == {"deleted": gone, "messages": 1, "files": 0}
    assert client.get(f"/api/sessions/{gone}").status_code == 404
    assert client.get("/api/memory/search?q=wombatmatter").get_json()["hits"] == []
    again = client.delete(f"/api/sessions/{gone}", headers={"X-CSRF-Token": token})
    assert again.status_code == 404 and "error" in again.get_json()

    hits = client.get("/api/memory/search?q=quokkasecret").get_json()["hits"]
    assert [h["message_id"] for h in hits] == [purge_id]
    response = client.delete(f"/api/messages/{purge_id}", headers={"X-CSRF-Token": token})
    assert response.status_code == 200 and response.get_json() == {"purged": purge_id}
    remaining = client.get(f"/api/sessions/{kept}").get_json()["messages"]
    assert [m["text"] for m in remaining] == ["remember the tangerine recipe"]
    assert client.get("/api/memory/search?q=quokkasecret").get_json()["hits"] == []
    assert client.delete(f"/api/messages/{purge_id}", headers={"X-CSRF-Token": token}).status_code == 404


def test_the_open_conversation_cannot_be_deleted(app: Flask) -> None:
    client = app.test_client()
    token = login(client)
    current = client.post("/api/sessions", headers={"X-CSRF-Token": token}).get_json()["id"]
    response = client.delete(f"/api/sessions/{current}", headers={"X-CSRF-Token": token})
    assert response.status_code == 409 and "new session" in response.get_json()["error"]
