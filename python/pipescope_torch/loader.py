"""Loads a user's model from `path/to/model.py:callable` or `package.module:callable`.

Invariant: load_model returns a torch.nn.Module or raises BridgeError whose message names
the spec part that was wrong (file, module, callable, or the returned type).
"""

import importlib
import importlib.util
import os
import sys

import torch

from pipescope_torch.errors import BridgeError, one_line


def _split_spec(spec: str):
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise BridgeError(
            f"model spec '{spec}' must look like path/to/model.py:build_model "
            "or package.module:build_model")
    return where, name


def _looks_like_path(where: str) -> bool:
    return where.endswith(".py") or "/" in where or os.sep in where or os.path.exists(where)


def _load_file(path: str):
    if not os.path.isfile(path):
        raise BridgeError(f"model file '{path}' does not exist")
    stem = os.path.splitext(os.path.basename(path))[0]
    module_name = f"pipescope_user_model_{stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise BridgeError(f"model file '{path}' cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    # The model file may import its siblings, as it would when run as a script.
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's file: anything can go wrong in it
        sys.modules.pop(module_name, None)
        raise BridgeError(f"cannot load model file '{path}': {one_line(exc)}") from exc
    finally:
        if sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    return module


def _import_module(name: str):
    try:
        return importlib.import_module(name)
    except Exception as exc:
        raise BridgeError(f"cannot import model module '{name}': {one_line(exc)}") from exc


def model_name_from_spec(spec: str) -> str:
    """A short default model name: the file stem or the module's last component."""
    where, _ = _split_spec(spec)
    if _looks_like_path(where):
        return os.path.splitext(os.path.basename(where))[0]
    return where.rsplit(".", 1)[-1]


def load_callable(spec: str):
    """(the callable named in `spec`, the module that holds it)."""
    where, name = _split_spec(spec)
    module = _load_file(where) if _looks_like_path(where) else _import_module(where)
    target = module
    for part in name.split("."):
        if not hasattr(target, part):
            raise BridgeError(f"'{where}' has no callable '{name}'")
        target = getattr(target, part)
    if not callable(target):
        raise BridgeError(f"'{name}' in '{where}' is a {type(target).__name__}, not a callable")
    return target, module


def load_model(spec: str) -> torch.nn.Module:
    """Imports the file or module named in `spec`, calls its callable, checks the result."""
    where, name = _split_spec(spec)
    target, _ = load_callable(spec)
    try:
        model = target()
    except Exception as exc:
        raise BridgeError(f"{name}() in '{where}' raised {one_line(exc)}") from exc
    if not isinstance(model, torch.nn.Module):
        raise BridgeError(
            f"{name}() in '{where}' returned {type(model).__name__}, expected a torch.nn.Module")
    return model
