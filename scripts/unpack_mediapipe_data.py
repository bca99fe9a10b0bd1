#!/usr/bin/env python3
"""Extract files from a MediaPipe web-solution ``*_packed_assets.data`` bundle.

The npm packages of the MediaPipe "solutions" ship some models inside an Emscripten
file-packager bundle: ``NAME_packed_assets.data`` is the concatenation of every file, and
``NAME_packed_assets_loader.js`` calls ``loadPackage({...})`` with a JSON object that lists
each file's path and its byte range ``[start, end)`` inside the bundle, plus the bundle size
``remote_package_size``.

Usage:
    unpack_mediapipe_data.py LOADER.js BUNDLE.data OUT_DIR [--only NAME ...] [--list]

Each file is written as OUT_DIR/<basename of its bundle path>. With --only, only the files
whose basename is listed are written (it is an error if one of them is not in the bundle).
With --list, nothing is written; the entries are printed as "start end size path".

Exit status: 0 on success, 1 on any error (the message says which file and why).
Needs only the Python standard library.
"""

import argparse
import json
import os
import sys


class UnpackError(Exception):
    pass


def _find_metadata_json(text, loader_path):
    """Return the JSON object text passed to loadPackage(...) in the loader script."""
    key = "loadPackage("
    # The loader defines `var loadPackage = function(metadata)` first and calls it at the end;
    # the call is the occurrence followed by '{'.
    pos = 0
    while True:
        pos = text.find(key, pos)
        if pos < 0:
            raise UnpackError(f"{loader_path}: no loadPackage({{...}}) call found; "
                              "is this an Emscripten *_packed_assets_loader.js?")
        start = pos + len(key)
        while start < len(text) and text[start].isspace():
            start += 1
        if start < len(text) and text[start] == "{":
            break
        pos = start
    # raw_decode stops at the end of the first complete JSON value, so braces inside strings
    # cannot confuse it.
    try:
        obj, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as e:
        raise UnpackError(f"{loader_path}: loadPackage argument is not valid JSON: {e}") from e
    return obj


def read_entries(loader_path, bundle_size_bytes):
    """Parse and validate the file table; returns a list of (path, start, end)."""
    try:
        with open(loader_path, "r", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise UnpackError(f"{loader_path}: cannot read loader: {e.strerror}") from e
    meta = _find_metadata_json(text, loader_path)
    if not isinstance(meta, dict) or not isinstance(meta.get("files"), list):
        raise UnpackError(f"{loader_path}: metadata has no 'files' list")
    declared = meta.get("remote_package_size")
    if declared is not None and declared != bundle_size_bytes:
        raise UnpackError(f"{loader_path}: remote_package_size is {declared} but the bundle "
                          f"has {bundle_size_bytes} bytes (mismatched loader/bundle pair?)")
    entries = []
    seen = set()
    for i, f in enumerate(meta["files"]):
        if not isinstance(f, dict):
            raise UnpackError(f"{loader_path}: files[{i}] is not an object")
        name, start, end = f.get("filename"), f.get("start"), f.get("end")
        if not isinstance(name, str) or not name:
            raise UnpackError(f"{loader_path}: files[{i}] has no filename")
        if not (isinstance(start, int) and isinstance(end, int)):
            raise UnpackError(f"{loader_path}: {name}: start/end are not integers")
        if not 0 <= start <= end <= bundle_size_bytes:
            raise UnpackError(f"{loader_path}: {name}: byte range [{start}, {end}) is outside "
                              f"the bundle of {bundle_size_bytes} bytes")
        base = os.path.basename(name)
        if base in ("", ".", ".."):
            raise UnpackError(f"{loader_path}: files[{i}] has unusable filename {name!r}")
        if base in seen:
            raise UnpackError(f"{loader_path}: two entries share the basename {base!r}")
        seen.add(base)
        entries.append((name, start, end))
    return entries


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("loader")
    ap.add_argument("bundle")
    ap.add_argument("out_dir")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="basenames to extract")
    ap.add_argument("--list", action="store_true", help="print the file table only")
    args = ap.parse_args(argv)
    try:
        try:
            with open(args.bundle, "rb") as f:
                blob = f.read()
        except OSError as e:
            raise UnpackError(f"{args.bundle}: cannot read bundle: {e.strerror}") from e
        entries = read_entries(args.loader, len(blob))
        if args.list:
            for name, start, end in entries:
                print(start, end, end - start, name)
            return 0
        wanted = set(args.only) if args.only else None
        if wanted is not None:
            missing = wanted - {os.path.basename(n) for n, _, _ in entries}
            if missing:
                raise UnpackError(f"{args.bundle}: not in bundle: {', '.join(sorted(missing))}")
        os.makedirs(args.out_dir, exist_ok=True)
        for name, start, end in entries:
            base = os.path.basename(name)
            if wanted is not None and base not in wanted:
                continue
            out = os.path.join(args.out_dir, base)
            tmp = out + ".part"
            with open(tmp, "wb") as f:
                f.write(blob[start:end])
            os.replace(tmp, out)
    except UnpackError as e:
        print(f"unpack_mediapipe_data: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
