"""The full-screen Textual app. Importing it must stay cheap: nothing here imports litellm."""
