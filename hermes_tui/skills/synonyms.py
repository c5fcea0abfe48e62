"""The router's paraphrase table: it lives in ``memory/synonyms.py``, shared with memory recall
(one table of everyday words for both), and is importable from here as before."""

from hermes_tui.memory.synonyms import TABLE, expansions, table

__all__ = ["TABLE", "expansions", "table"]
