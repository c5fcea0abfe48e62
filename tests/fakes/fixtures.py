"""Pytest fixtures for the fake LLM server (filled in by the fake-server work)."""
