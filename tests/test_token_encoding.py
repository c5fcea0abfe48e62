"""One tokenizer per model, loaded when first needed (issue #39).

litellm's ``default_encoding`` module loads cl100k_base (44 MB) whenever anything counts, even for
a model that counts with o200k_base (79 MB), and litellm counts every prompt inside ``completion``
for a cost estimate. Hermes stands in for that module (``llm._defer_default_encoding``). One fresh
interpreter (``tests/encoding_probe.py``) counts and streams a gpt-4o request through the fake
server, then counts for gpt-4 and an Anthropic model, then with litellm's own module restored.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
ONLY_O200K = {"encodings": ["o200k_base"], "litellm_default_module": False}


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("encoding-home")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "LITELLM_", "TIKTOKEN_"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run([sys.executable, "-m", "tests.encoding_probe", str(home)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_a_gpt_4o_count_and_turn_load_only_o200k(probe: dict[str, Any]) -> None:
    assert probe["after_count"] == ONLY_O200K
    assert probe["after_stream"] == ONLY_O200K  # litellm's own prompt count in completion() included


def test_counts_equal_litellm_own_for_openai_and_anthropic_models(probe: dict[str, Any]) -> None:
    assert probe["restored"]["litellm_default_module"]  # the comparison ran litellm's unmodified path
    assert probe["hermes"] == probe["litellm"]
    assert probe["hermes"]["gpt-4o"]["with_tools"] > probe["hermes"]["gpt-4o"]["plain"] > 10
    assert probe["hermes"]["claude"]["with_tools"] > 400  # the Anthropic model still counts (cl100k, as before)
