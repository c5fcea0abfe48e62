"""Defer the bodies of litellm's unused module subtrees until something really uses them.

``import litellm`` loads ~3,100 modules, and a streamed completion runs code from a few hundred:
most of the rest are openai SDK type modules for APIs Hermes never calls (assistants, responses,
evals, fine tuning). ``install()`` puts a ``sys.meta_path`` finder in front of the normal ones: a
module inside a ``DEFERRED`` subtree is created (``__spec__``, ``__path__``, ``__file__`` set, so
its submodules import normally) but its body runs only on first real attribute use, so a provider
path that does need it still works, one attribute access later.

``from X import name`` reads ``X.name`` at once, which would run the whole body. A package whose
``__init__`` only re-exports its submodules' names (``from .assistant import Assistant as
Assistant``: every openai ``types`` package) answers such a read by importing just the one
submodule that defines the name; anything else (``dir()``, ``__dict__``, an unknown name) runs the
full body. A module of ``CALLED`` goes one step further: each function listed for it is answered
by a stand-in that runs the body on its first call, so an importer that only takes functions it
calls on some paths never pays for the module. ``tests/test_lazy_imports.py`` fails when ``import
litellm`` plus a streamed completion on either wire runs a deferred package's body or a called
module's. ``llm._lib()`` installs it, in every process that imports litellm.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types
from collections.abc import Iterable, Mapping, Sequence

DEFERRED: tuple[str, ...] = (
    # ~750 modules, 24 % of the import: ``openai/__init__`` binds ``types`` as a module, and its
    # ``__init__`` (and beta's, responses', threads', ...) only re-export their submodules, so
    # litellm's ``from openai.types.beta.assistant import Assistant`` and the SDK's ``from
    # ...types.beta import AssistantStreamEvent`` load only the modules defining what they name.
    "openai.types",
)
"""Module subtrees whose bodies wait for first use (a name covers the module and its submodules).

Measured and left out: litellm's own subtrees (``types.interactions``, ``repositories``,
``types.guardrails``, ``llms.oci``, ``fine_tuning``) and aiohttp: every importer takes names from
them at import (``from litellm.types.guardrails import GuardrailEventHooks``, ``from .fine_tuning.main
import *``, ``from aiohttp import ClientSession`` in litellm's HTTP handler), so deferring them
saves nothing. Deferring all of litellm, openai, aiohttp, requests, urllib3, cryptography, jinja2,
yaml and pydantic_settings at once leaves only 136 more modules unrun than this list, most of them
empty package ``__init__`` files, for more exposure to litellm's import cycles.
"""

CALLED: dict[str, frozenset[str]] = {
    # litellm's completion imports these four on every call (``update_messages_with_model_file_ids``)
    # and calls them only for a ``file`` content block, which Hermes never sends; the module's body
    # builds the proxy's ~220 pydantic models (``litellm.proxy._types``): ~330 ms of a first call.
    "litellm.proxy.openai_files_endpoints.common_utils": frozenset({
        "convert_b64_uid_to_unified_uid", "get_original_file_id", "is_base64_encoded_unified_file_id",
        "is_model_embedded_id"}),
}
"""Modules whose importers take only these functions from them: the body runs at a first call."""

BLOCKED: tuple[str, ...] = (
    # httpx's command line (rich, pygments, click: ~60 ms): httpx's ``__init__`` imports it in a
    # ``try``, and on ImportError defines a ``main`` that says to install ``httpx[cli]``.
    "httpx._main",
)
"""Optional modules whose importer has a designed fallback for their absence (never used here)."""

# What the import system and module-walking tools read without needing the body.
_METADATA = frozenset({
    "__name__", "__spec__", "__path__", "__file__", "__cached__", "__loader__", "__package__",
    "__class__", "__doc__", "__builtins__",
})

_MISSING = object()

# Plain module access: the class of a module changes once its body has run, so no super().
_get = types.ModuleType.__getattribute__
_set = types.ModuleType.__setattr__


def in_subtrees(name: str, subtrees: Sequence[str]) -> bool:
    """Whether module ``name`` lies in one of ``subtrees``."""
    return any(name == root or name.startswith(root + ".") for root in subtrees)


def reexports(source: str, package: str) -> dict[str, tuple[str, str | None]] | None:
    """``name -> (module, attribute)`` for an ``__init__`` made only of relative re-exports.

    ``attribute`` None means the name is the submodule itself (``from . import x``). None when the
    body does anything else (an assignment, a star import, a plain import): it must run whole.
    """
    exports: dict[str, tuple[str, str | None]] = {}
    for index, node in enumerate(ast.parse(source).body):
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if not (isinstance(node, ast.ImportFrom) and node.level >= 1):
            return None
        base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
        for alias in node.names:
            if alias.name == "*":
                return None
            bound = alias.asname or alias.name
            exports[bound] = (f"{base}.{alias.name}", None) if node.module is None else (base, alias.name)
    return exports


class _LazyModule(types.ModuleType):
    """A created module whose body runs on the first access to anything but its metadata.

    Importing a submodule (the import system reads ``__path__`` and sets the child as an
    attribute) does not run it, nor does reading a name a re-export package maps to a submodule.
    Once run, the object becomes a plain module again.
    """

    def __getattribute__(self, attr: str) -> object:
        if attr in _METADATA:
            return _get(self, attr)
        namespace = _get(self, "__dict__")
        loader = getattr(namespace.get("__spec__"), "loader", None)
        if isinstance(loader, _DeferringLoader):
            value = namespace.get(attr)
            if isinstance(value, types.ModuleType) and value.__name__ == f"{namespace['__name__']}.{attr}":
                return value  # a submodule the import system bound here: the body is not needed for it
            if attr in loader.functions:
                return loader.stand_in(self, attr)
            if loader.exports is not None and not attr.startswith("__"):
                found = loader.resolve(self, attr)
                if found is not _MISSING:
                    return found
            _materialize(self)
        return _get(self, attr)

    def __setattr__(self, attr: str, value: object) -> None:
        namespace = _get(self, "__dict__")
        loader = getattr(namespace.get("__spec__"), "loader", None)
        submodule = isinstance(value, types.ModuleType) and value.__name__ == f"{namespace['__name__']}.{attr}"
        kept = isinstance(loader, _DeferringLoader) and loader.exports is not None and attr not in loader.exports
        if not (submodule or kept):
            _materialize(self)  # the value must land on the run module, not be overwritten by its body
        _set(self, attr, value)

    def __delattr__(self, attr: str) -> None:
        _materialize(self)
        types.ModuleType.__delattr__(self, attr)

    def __dir__(self) -> list[str]:
        _materialize(self)
        return list(_get(self, "__dict__"))


class _DeferringLoader(importlib.abc.Loader):
    """Wraps a module's own loader: creating it as usual, running its body later."""

    def __init__(self, loader: importlib.abc.Loader, functions: frozenset[str] = frozenset()) -> None:
        self.loader = loader
        self.functions = functions  # names answered by ``stand_in`` (a ``CALLED`` module's)
        self.lock = threading.RLock()
        self.loading = False
        self.exports: dict[str, tuple[str, str | None]] | None = None

    def __getattr__(self, attr: str) -> object:
        return getattr(self.loader, attr)  # resources, get_source, is_package: the real loader's

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        spec = module.__spec__
        if spec is not None and spec.submodule_search_locations is not None:
            source = self.loader.get_source(spec.name) if isinstance(self.loader, importlib.abc.InspectLoader) else None
            self.exports = reexports(source, spec.name) if source is not None else None
            if self.exports is None:
                # Any other package body runs now, before its submodules as always: run later, it
                # could import a submodule that is half-way through its own body (a cycle).
                spec.loader = self.loader
                _set(module, "__loader__", self.loader)
                self.loader.exec_module(module)
                return
        module.__class__ = _LazyModule

    @staticmethod
    def stand_in(module: types.ModuleType, attr: str) -> object:
        """A function that runs ``module``'s body on its first call, then calls the real one."""

        def call(*args: object, **kwargs: object) -> object:
            _materialize(module)
            return getattr(module, attr)(*args, **kwargs)

        call.__name__ = call.__qualname__ = attr
        call.__module__ = _get(module, "__name__")
        return call

    def resolve(self, module: types.ModuleType, attr: str) -> object:
        """One name of a re-export package, from the one submodule that defines it.

        A name the body does not bind can only be a submodule there (``from pkg import sub``
        imports it too); anything else is ``_MISSING`` and the full body decides.
        """
        assert self.exports is not None
        source, name = self.exports.get(attr, (f"{module.__name__}.{attr}", None))
        try:
            value: object = importlib.import_module(source)
        except ModuleNotFoundError as error:
            if error.name != source or attr in self.exports:
                raise
            return _MISSING
        if name is not None:
            value = getattr(value, name)
        _get(module, "__dict__")[attr] = value
        return value


def _materialize(module: types.ModuleType) -> None:
    """Run a deferred module's body, once, in its own namespace (other threads wait for it)."""
    spec = _get(module, "__spec__")
    deferring = spec.loader
    if not isinstance(deferring, _DeferringLoader):
        return
    with deferring.lock:
        if type(module) is not _LazyModule or deferring.loading:
            return  # already run, or this thread is running it (a circular import sees it partial)
        deferring.loading = True
        try:
            spec.loader = deferring.loader
            _set(module, "__loader__", deferring.loader)
            deferring.loader.exec_module(module)
            object.__setattr__(module, "__class__", types.ModuleType)  # a plain module from now on
        except BaseException:
            spec.loader = deferring
            _set(module, "__loader__", deferring)
            raise
        finally:
            deferring.loading = False


class LazySubtreeFinder(importlib.abc.MetaPathFinder):
    """Finds modules of the deferred subtrees with the other finders and defers their bodies."""

    def __init__(self, deferred: Sequence[str], blocked: Sequence[str],
                 called: Mapping[str, frozenset[str]] | None = None) -> None:
        self.deferred = tuple(deferred)
        self.blocked = tuple(blocked)
        self.called = dict(called or {})

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname in self.blocked:
            raise ImportError(f"{fullname} is not loaded in this process", name=fullname)
        functions = self.called.get(fullname, frozenset())
        if not (functions or in_subtrees(fullname, self.deferred)):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        # Only Python source or bytecode: an extension module's body cannot wait.
        if isinstance(spec.loader, (importlib.machinery.SourceFileLoader, importlib.machinery.SourcelessFileLoader)):
            spec.loader = _DeferringLoader(spec.loader, functions)
        return spec


def install(deferred: Sequence[str] = DEFERRED, blocked: Sequence[str] = BLOCKED,
            called: Mapping[str, frozenset[str]] = CALLED) -> LazySubtreeFinder:
    """Put the deferring finder first on ``sys.meta_path`` (once per process)."""
    for finder in sys.meta_path:
        if isinstance(finder, LazySubtreeFinder):
            return finder
    finder = LazySubtreeFinder(deferred, blocked, called)
    sys.meta_path.insert(0, finder)
    return finder


def ran(subtrees: Sequence[str] = DEFERRED) -> list[str]:
    """Packages of ``subtrees`` whose whole bodies have run in this process (a test's and a bench's view)."""
    return sorted(name for name, module in list(sys.modules.items())
                  if in_subtrees(name, subtrees) and hasattr(module, "__path__") and type(module) is not _LazyModule)


def called_ran(modules: Iterable[str] = CALLED) -> list[str]:
    """Modules of ``modules`` whose bodies have run in this process."""
    return sorted(name for name in modules if name in sys.modules and type(sys.modules[name]) is not _LazyModule)


def waiting() -> list[str]:
    """Modules created but whose bodies have not run."""
    return sorted(name for name, module in list(sys.modules.items()) if type(module) is _LazyModule)
