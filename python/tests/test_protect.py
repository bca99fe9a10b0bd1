"""kestrel.protect against Model.load: encrypted models load with the key and run like the
plain one; a wrong key or a modified file raises TamperedError."""

from __future__ import annotations

import numpy as np
import pytest

import kestrel


def test_encrypt_load_run(blazeface, tmp_path):
    key = kestrel.protect.keygen(tmp_path / "app.key")
    assert len(key) == 32 and (tmp_path / "app.key").stat().st_mode & 0o077 == 0
    enc = kestrel.protect.encrypt(blazeface, tmp_path / "m.ksme", key)
    assert open(enc, "rb").read() != open(blazeface, "rb").read()
    x = np.random.default_rng(9).uniform(-1, 1, (1, 128, 128, 3)).astype(np.float32)
    with kestrel.Model.load(blazeface) as m, kestrel.Session(m) as s:
        want = s.run(x)
    with kestrel.Model.load(enc, key=key) as m, kestrel.Session(m) as s:
        got = s.run(x)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])
    # the key file works as well as the bytes, and decrypt gives the plain model back
    dec = kestrel.protect.decrypt(enc, tmp_path / "plain.ksm", tmp_path / "app.key")
    with kestrel.Model.load(dec) as m:
        assert [t.name for t in m.inputs] == ["input"]
    with pytest.raises(kestrel.TamperedError):
        kestrel.Model.load(enc, key=kestrel.protect.keygen())
    with pytest.raises(kestrel.InvalidArgumentError):
        kestrel.Model.load(enc)  # no key for an encrypted model
    data = bytearray(open(enc, "rb").read())
    data[len(data) // 2] ^= 1
    (tmp_path / "bad.ksme").write_bytes(bytes(data))
    with pytest.raises(kestrel.TamperedError):
        kestrel.Model.load(tmp_path / "bad.ksme", key=key)
    with pytest.raises(kestrel.InvalidArgumentError, match="32 bytes"):
        kestrel.protect.encrypt(blazeface, tmp_path / "x.ksme", b"short")
