"""Encrypted models (ks-protect): keys, encryption and decryption.

    >>> key = kestrel.protect.keygen("app.key")           # 32 random bytes, file mode 0600
    >>> kestrel.protect.encrypt("face.ksm", "face.ksme", key)
    >>> model = kestrel.Model.load("face.ksme", key=key)

The key is never written into the model; ship it with the app by your own means. A wrong key or
a modified file raises :class:`kestrel.TamperedError` at load.
"""

from __future__ import annotations

import os
import tempfile
from typing import Iterator, Optional, Union

from contextlib import contextmanager

from ._errors import InvalidArgumentError
from ._tools import run_tool

KeyLike = Union[bytes, str, "os.PathLike[str]"]


def _read_key(path: str) -> bytes:
    data = open(path, "rb").read()
    text = data.strip()
    if len(text) == 64:
        try:
            return bytes.fromhex(text.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            pass
    if len(data) != 32:
        raise InvalidArgumentError(f"{path}: a key file holds 32 raw bytes or 64 hex digits")
    return data


@contextmanager
def _key_file(key: KeyLike) -> Iterator[str]:
    """A key file for the tool: the path itself, or the bytes written to a private temp file."""
    if not isinstance(key, (bytes, bytearray)):
        yield os.fspath(key)
        return
    if len(key) != 32:
        raise InvalidArgumentError(f"a key is 32 bytes, not {len(key)}")
    fd, path = tempfile.mkstemp(prefix="kestrel-key-")
    try:
        os.write(fd, bytes(key))
        os.close(fd)
        yield path
    finally:
        os.remove(path)


def keygen(path: Optional["os.PathLike[str] | str"] = None) -> bytes:
    """A new random 32-byte key; with ``path``, also written there (mode 0600, ks-protect's
    format)."""
    if path is None:
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "key")
            run_tool("ks-protect", ["keygen", p])
            return _read_key(p)
    p = os.fspath(path)
    run_tool("ks-protect", ["keygen", p])
    return _read_key(p)


def encrypt(src: "os.PathLike[str] | str", dst: "os.PathLike[str] | str", key: KeyLike,
            chunk_size: Optional[int] = None) -> str:
    """Encrypts a .ksm (``key``: 32 bytes or a key file). Returns ``dst``."""
    dst_s = os.fspath(dst)
    with _key_file(key) as kf:
        args = ["encrypt", "--key-file", kf, os.fspath(src), dst_s]
        if chunk_size is not None:
            args += ["--chunk-size", str(int(chunk_size))]
        run_tool("ks-protect", args, output=dst_s)
    return dst_s


def decrypt(src: "os.PathLike[str] | str", dst: "os.PathLike[str] | str", key: KeyLike) -> str:
    """Decrypts an encrypted .ksm back to a plain one. Returns ``dst``."""
    dst_s = os.fspath(dst)
    with _key_file(key) as kf:
        run_tool("ks-protect", ["decrypt", "--key-file", kf, os.fspath(src), dst_s], output=dst_s)
    return dst_s


def info(path: "os.PathLike[str] | str") -> str:
    """ks-protect's description of a model file (encrypted or not)."""
    return str(run_tool("ks-protect", ["info", os.fspath(path)]).stdout)


__all__ = ["keygen", "encrypt", "decrypt", "info"]
