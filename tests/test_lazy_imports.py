# mypy: disable-error-code="import-not-found"
# (lazypkg_probe and lazypkg_blocker are written by the fixture below, at test time)
"""The cold path imports only what a completion uses (hermes_tui/lazy_imports.py).

First the deferring finder on a small package written here (no litellm): a re-export package's
body waits, a name it re-exports loads only its own submodule, anything else runs the body, and a
blocked module takes its importer's fallback. Then one fresh interpreter (``tests/lazy_probe.py``)
imports litellm as a cold turn does and streams through every provider of ``PROVIDER_TABLE``: no
deferred package's body may run, and every call must still answer as it does without the finder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_tui import lazy_imports
from hermes_tui.lazy_imports import LazySubtreeFinder, reexports
from hermes_tui.providers import PROVIDER_TABLE
from tests.lazy_probe import NATIVE_WIRE

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = {
    "__init__.py": '"""Re-exports only."""\nfrom .light import Light as Light\nfrom .heavy import Heavy\n'
                   "from . import other\n",
    "light.py": "class Light:\n    pass\n",
    "heavy.py": "from lazypkg_probe import loaded\nloaded.names.append('heavy')\nclass Heavy:\n    pass\n",
    "other.py": "from lazypkg_probe import loaded\nloaded.names.append('other')\n",
    "plain.py": "from lazypkg_probe import loaded\nloaded.names.append('plain')\nVALUE = 1\n",
    "loaded.py": "names = []\n",
    "called.py": "from lazypkg_probe import loaded\nloaded.names.append('called')\nVALUE = 2\n"
                 "def add(x):\n    return x + VALUE\n",
}


@pytest.fixture
def package(tmp_path: Path) -> Iterator[tuple[LazySubtreeFinder, Any]]:
    """``lazypkg_probe`` on sys.path with a finder deferring it (``loaded`` records which bodies ran)."""
    root = tmp_path / "lazypkg_probe"
    root.mkdir()
    for name, text in PACKAGE.items():
        (root / name).write_text(text)
    (tmp_path / "lazypkg_blocker.py").write_text(textwrap.dedent("""\
        try:
            from lazypkg_probe.cli import main
        except ImportError:
            main = None
        """))
    (root / "impure").mkdir()
    (root / "impure" / "__init__.py").write_text("import lazypkg_probe.loaded as loaded\nloaded.names.append('impure')\n")
    (root / "cli.py").write_text("from lazypkg_probe import loaded\nloaded.names.append('cli')\nmain = 1\n")
    finder = LazySubtreeFinder(("lazypkg_probe",), ("lazypkg_probe.cli",), {"lazypkg_probe.called": frozenset({"add"})})
    sys.path.insert(0, str(tmp_path))
    sys.meta_path.insert(0, finder)
    try:
        from lazypkg_probe import loaded
        yield finder, loaded
    finally:
        sys.meta_path.remove(finder)
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n.startswith("lazypkg_")]:
            del sys.modules[name]


def _waiting() -> list[str]:
    """The probe's modules still waiting (an earlier test of this process may have imported
    litellm through the real finder, whose ``openai.types`` modules wait too)."""
    return [name for name in lazy_imports.waiting() if name.startswith("lazypkg_")]


def test_a_reexported_name_loads_only_its_submodule(package: tuple[LazySubtreeFinder, Any]) -> None:
    _, loaded = package
    # as the SDK's ``from ...types.beta import AssistantStreamEvent``
    from lazypkg_probe import Light

    assert Light.__name__ == "Light" and loaded.names == []  # neither heavy nor other ran
    assert _waiting() == ["lazypkg_probe"]
    from lazypkg_probe import Heavy

    assert Heavy.__module__ == "lazypkg_probe.heavy" and loaded.names == ["heavy"]


def test_anything_else_runs_the_whole_body_once(package: tuple[LazySubtreeFinder, Any]) -> None:
    _, loaded = package
    import lazypkg_probe

    assert loaded.names == []
    assert "Heavy" in dir(lazypkg_probe)  # dir() needs the body
    # ``from . import other`` binds a module of the subtree: its own body waits in turn.
    assert loaded.names == ["heavy"] and _waiting() == ["lazypkg_probe.other"]
    from lazypkg_probe import plain  # submodules still import normally afterwards

    assert plain.VALUE == 1
    with pytest.raises(AttributeError):
        _ = lazypkg_probe.missing


def test_a_plain_module_waits_for_its_first_attribute(package: tuple[LazySubtreeFinder, Any]) -> None:
    _, loaded = package
    from lazypkg_probe import plain

    assert loaded.names == [] and "lazypkg_probe.plain" in _waiting()
    assert plain.VALUE == 1 and loaded.names == ["plain"]


def test_a_called_module_runs_at_the_first_call_of_a_listed_function(package: tuple[LazySubtreeFinder, Any]) -> None:
    _, loaded = package
    from lazypkg_probe.called import add

    assert loaded.names == [] and "lazypkg_probe.called" in _waiting()
    assert add(1) == 3 and loaded.names == ["called"] and "lazypkg_probe.called" not in _waiting()
    assert add(2) == 4 and loaded.names == ["called"]  # once


def test_any_other_name_of_a_called_module_runs_its_body(package: tuple[LazySubtreeFinder, Any]) -> None:
    _, loaded = package
    from lazypkg_probe.called import VALUE

    assert VALUE == 2 and loaded.names == ["called"]


def test_any_other_package_body_runs_at_import(package: tuple[LazySubtreeFinder, Any]) -> None:
    """Run later, it could import a submodule that is half-way through its own body."""
    _, loaded = package
    import lazypkg_probe.impure  # noqa: F401 - the import is the test

    assert loaded.names == ["impure"] and "lazypkg_probe.impure" not in _waiting()


def test_a_blocked_module_takes_its_importers_fallback(package: tuple[LazySubtreeFinder, Any]) -> None:
    _, loaded = package
    import lazypkg_blocker

    assert lazypkg_blocker.main is None and "lazypkg_probe.cli" not in sys.modules and "cli" not in loaded.names


def test_reexports_reads_only_pure_reexport_bodies() -> None:
    assert reexports('"""Doc."""\nfrom .a import A as A\nfrom ..b import B\nfrom . import c\n', "p.q") == {
        "A": ("p.q.a", "A"), "B": ("p.b", "B"), "c": ("p.q.c", None)}
    for impure in ("from .a import *\n", "import os\n", "from .a import A\nX = 1\n", "from os import path\n"):
        assert reexports(impure, "p") is None


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One fresh interpreter: litellm imported as a cold turn does, then every provider streamed."""
    home = tmp_path_factory.mktemp("lazy-home")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "LITELLM_"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run([sys.executable, "-m", "tests.lazy_probe", str(home)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_no_deferred_package_runs_for_import_and_streams_on_both_wires(probe: dict[str, Any]) -> None:
    assert lazy_imports.DEFERRED and probe["after_import"] == []
    assert probe["after_streams"] == []  # anthropic, openai and openrouter streamed by then
    assert probe["blocked_loaded"] == []
    assert lazy_imports.CALLED and probe["called_ran"] == [] and not probe["proxy_types"]
    assert probe["called_functions"] == {name: sorted(names) for name, names in lazy_imports.CALLED.items()}
    assert probe["frozen"] > 100_000  # the import's objects: no collection walks them again


@pytest.mark.parametrize("name", list(PROVIDER_TABLE))
def test_every_provider_answers_through_the_lazy_import(probe: dict[str, Any], name: str) -> None:
    calls = probe[name]
    provider = PROVIDER_TABLE[name]
    assert calls["tokens"] > 20  # the request's tokens, counted by litellm's tokenizer for this model
    if name in NATIVE_WIRE:
        assert "(404)" in calls["refused"]["error"]  # litellm's Ollama path ran to the HTTP answer
        return
    assert calls["tool_call"] == {"text": "Let me look at a.txt.", "calls": [["read_file", '{"path": "a.txt"}']],
                                  "usage": [321, 45], "notices": []}
    assert calls["retried"]["text"] == "made it" and "(429)" in calls["retried"]["notices"][0]
    assert f"check {provider.key_env_var}" in calls["refused"]["error"]
