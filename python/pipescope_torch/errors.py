"""The one error type the bridge raises for bad user input.

Invariant: library code raises BridgeError with a one-line message naming what was wrong;
only the command-line entry point turns it into exit code 2.
"""


class BridgeError(Exception):
    """A user-facing input error (bad model path, untraceable module, bad shape, ...)."""


def one_line(exc: BaseException, limit: int = 200) -> str:
    """`ExcType: first line of the message`, cut to `limit` characters."""
    text = str(exc).strip().splitlines()
    first = text[0].strip() if text else ""
    out = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return out if len(out) <= limit else out[: limit - 3] + "..."
