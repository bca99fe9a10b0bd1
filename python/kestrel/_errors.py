"""Exceptions: one KestrelError subclass per ks_status (kestrel/kestrel.h)."""

from __future__ import annotations

from typing import Dict, Type


class KestrelError(Exception):
    """A Kestrel call failed.

    Attributes:
        status: the ks_status value (an int; see ``kestrel.Status``).
        status_name: the library's name of the status, e.g. ``"invalid model"``.
        message: the library's message (``ks_last_error``), naming the file, tensor, op and
            offending value where known.
    """

    status: int = -1
    status_name: str = "error"

    def __init__(self, message: str, status: int | None = None) -> None:
        if status is not None:
            self.status = status
        self.message = message
        super().__init__(f"{self.status_name}: {message}" if message else self.status_name)


class InvalidArgumentError(KestrelError, ValueError):
    status, status_name = 1, "invalid argument"


class KestrelMemoryError(KestrelError, MemoryError):
    status, status_name = 2, "out of memory"


class KestrelIOError(KestrelError, OSError):
    status, status_name = 3, "i/o error"

    def __init__(self, message: str, status: int | None = None) -> None:
        KestrelError.__init__(self, message, status)


class InvalidModelError(KestrelError, ValueError):
    status, status_name = 4, "invalid model"


class UnsupportedError(KestrelError, NotImplementedError):
    status, status_name = 5, "unsupported"


class VersionMismatchError(KestrelError):
    status, status_name = 6, "version mismatch"


class ChecksumMismatchError(KestrelError):
    status, status_name = 7, "checksum mismatch"


class InvalidShapeError(KestrelError, ValueError):
    status, status_name = 8, "invalid shape"


class InvalidStateError(KestrelError, RuntimeError):
    status, status_name = 9, "invalid state"


class LimitExceededError(KestrelError):
    status, status_name = 10, "limit exceeded"


class InternalError(KestrelError, RuntimeError):
    status, status_name = 11, "internal error"


class TamperedError(KestrelError):
    status, status_name = 12, "tampered"


class ToolError(KestrelError, RuntimeError):
    """A Kestrel command-line tool (ks-convert, ks-quant, ...) failed; ``message`` is its stderr."""

    status, status_name = -1, "tool failed"


_BY_STATUS: Dict[int, Type[KestrelError]] = {
    cls.status: cls
    for cls in (InvalidArgumentError, KestrelMemoryError, KestrelIOError, InvalidModelError,
                UnsupportedError, VersionMismatchError, ChecksumMismatchError, InvalidShapeError,
                InvalidStateError, LimitExceededError, InternalError, TamperedError)
}


def from_status(status: int, message: str) -> KestrelError:
    """The exception for ``status`` (called by the native module on every failure)."""
    cls = _BY_STATUS.get(status)
    if cls is None:
        err = KestrelError(message, status)
        err.status_name = f"status {status}"
        return err
    return cls(message)
