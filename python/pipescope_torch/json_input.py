"""Reads a JSON file the bridge takes (a profile, a plan) as pipescope's own reader does
(core/json_parse.h): at most 100 levels of arrays and objects, each key once per object, no
NaN or Infinity and no number beyond a double. Anything else raises BridgeError naming the
file and the JSON path: "p.json: layers[0].forward_ms[1]: NaN is not a JSON number".

Invariant: what load_json returns is plain JSON with finite numbers only, so a profile the
bridge writes from it reads in pipescope (Python's json.load takes NaN, Infinity and a key
twice without a word; pipescope refuses all three).

    profile = load_json("a.json", "profile")
"""

import json
import math
import re
from typing import List, Tuple

from pipescope_torch.errors import BridgeError

MAX_DEPTH = 100  # core/json_parse.h's kMaxJsonDepth

# a string (escapes inside) or one structural character; numbers and literals are skipped
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:,]')


class _Refused:
    """A value the parser's hooks refused; _find_refused names its path."""

    def __init__(self, why: str):
        self.why = why


def _path(frames: List[list]) -> str:
    out = ""
    for is_array, key, index in frames:
        if is_array:
            out += f"[{index}]"
        elif key is not None:
            out += ("." if out else "") + key
    return out


def _check_depth(text: str, source: str) -> None:
    """Refuses nesting past MAX_DEPTH where the parser would recurse, naming where it opens."""
    frames: List[list] = []  # [is_array, key, index]
    last_string = None
    for token in _TOKENS.finditer(text):
        t = token.group()
        if t[0] == '"':
            last_string = t
        elif t in "[{":
            if len(frames) >= MAX_DEPTH:
                raise BridgeError(f"{source}: {_path(frames)}: JSON nested deeper than {MAX_DEPTH} levels of arrays "
                                  "and objects (the limit for pipescope input files)")
            frames.append([t == "[", None, 0])
        elif t in "]}":
            if frames:
                frames.pop()
        elif t == ":" and frames and last_string is not None:
            frames[-1][1] = json.loads(last_string)
        elif t == "," and frames and frames[-1][0]:
            frames[-1][2] += 1


def _pairs(pairs: List[Tuple[str, object]]) -> dict:
    out = {}
    for key, value in pairs:
        out[key] = _Refused("key given twice in one object (each key may appear once)") if key in out else value
    return out


def _constant(name: str) -> _Refused:
    return _Refused(f"{name} is not a JSON number (NaN and Infinity are not JSON numbers)")


def _float(text: str):
    value = float(text)
    return value if math.isfinite(value) else _Refused(f"number overflow parsing '{text}' (beyond the range of a double)")


def _find_refused(value, path: str):
    """(path, why) of the first refused value, or None."""
    if isinstance(value, _Refused):
        return path, value.why
    if isinstance(value, dict):
        for key, item in value.items():
            found = _find_refused(item, f"{path}.{key}" if path else key)
            if found:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _find_refused(item, f"{path}[{i}]")
            if found:
                return found
    return None


def loads_json(text: str, source: str):
    """The JSON of `text`, read as pipescope reads it; `source` names it in errors."""
    _check_depth(text, source)
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float)
    except json.JSONDecodeError as exc:
        raise BridgeError(f"{source}: invalid JSON: {exc}") from None
    found = _find_refused(value, "")
    if found:
        path, why = found
        raise BridgeError(f"{source}: {path}: {why}" if path else f"{source}: {why}")
    return value


def load_json(path: str, what: str):
    """The JSON file at `path` (`what` it is: "profile", "plan"), read as pipescope reads it."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise BridgeError(f"{what} '{path}' does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BridgeError(f"{path}: cannot read the {what}: {exc}") from None
    return loads_json(text, path)
