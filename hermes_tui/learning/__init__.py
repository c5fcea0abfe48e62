"""Learning from sessions: ``curator`` asks the model for skills, memories and a session's summary
and title after a turn or a session; ``pending`` keeps the summaries still to write (by the warm
helper, or the next start of any surface)."""
