"""POST /files bodies as untrusted clients send them
(tollgate_sdk.serve._upload): multipart bodies made by httpx (what the
e2b SDKs send with), gzip bodies, and the bodies that inflate or split
past what the service may hold."""
from __future__ import annotations

import gzip
import os
import tracemalloc
import zlib

import httpx
import pytest

from tollgate_sdk.serve._service_error import ServiceError
from tollgate_sdk.serve._upload import PARTS_MAX, files_of

LIMIT = 64 << 20


def multipart(files: list[tuple[str, bytes]]) -> tuple[str, bytes]:
    req = httpx.Request("POST", "http://x/files", files=[("file", (n, d)) for n, d in files])
    return req.headers["content-type"], req.read()


def test_httpx_multipart_files_come_out_whole() -> None:
    blobs = [("a.bin", os.urandom(300_000)), ("dir/ünï cödé.txt", b"line\r\n--not a boundary\r\n"),
             ("empty", b"")]
    ctype, body = multipart(blobs)
    assert files_of(ctype, "", body, LIMIT) == blobs


def test_a_plain_body_is_one_file() -> None:
    assert files_of("application/octet-stream", "", b"abc", LIMIT) == [(None, b"abc")]


def test_gzip_bodies_one_member_or_several() -> None:
    assert files_of("application/octet-stream", "gzip", gzip.compress(b"x" * 1000), LIMIT) == [(None, b"x" * 1000)]
    two = gzip.compress(b"ab") + gzip.compress(b"cd")
    assert files_of("application/octet-stream", "gzip", two, LIMIT) == [(None, b"abcd")]
    ctype, body = multipart([("f", b"zipped part")])
    assert files_of(ctype, "gzip", gzip.compress(body), LIMIT) == [("f", b"zipped part")]


def test_a_gzip_bomb_is_refused_without_inflating_it() -> None:
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = b"".join(co.compress(bytes(1 << 20)) for _ in range(1024)) + co.flush()  # 1 GiB of zeros
    assert len(bomb) < 2 << 20
    tracemalloc.start()
    with pytest.raises(ServiceError) as e:
        files_of("application/octet-stream", "gzip", bomb, LIMIT)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert e.value.status == 413 and "inflates" in str(e.value)
    assert peak < 3 * LIMIT, peak


@pytest.mark.parametrize("body, why", [
    (b"plain text, not gzip at all", "not gzip"),
    (gzip.compress(b"y" * 10_000)[:-20], "ends early"),
])
def test_broken_gzip_is_a_400(body: bytes, why: str) -> None:
    with pytest.raises(ServiceError) as e:
        files_of("application/octet-stream", "gzip", body, LIMIT)
    assert e.value.status == 400 and why in str(e.value)


def test_an_unknown_encoding_is_named() -> None:
    with pytest.raises(ServiceError) as e:
        files_of("application/octet-stream", "br", b"x", LIMIT)
    assert e.value.status == 415 and "gzip" in str(e.value)


@pytest.mark.parametrize("ctype, body, why", [
    ("multipart/form-data", b"--x\r\n\r\nabc\r\n--x--", "boundary"),
    ("multipart/form-data; boundary=x", b"no delimiter at all", "without parts"),
    ("multipart/form-data; boundary=x",
     b'--x\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc', "not closed"),
    ("multipart/form-data; boundary=x", b'--x\r\nContent-Disposition: form-data; name="file"', "blank line"),
    ("multipart/form-data; boundary=x", b'--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nv\r\n--x--',
     "no file part"),
])
def test_malformed_multipart_is_a_400_that_says_why(ctype: str, body: bytes, why: str) -> None:
    with pytest.raises(ServiceError) as e:
        files_of(ctype, "", body, LIMIT)
    assert e.value.status == 400 and why in str(e.value)


def test_files_and_parts_are_bounded() -> None:
    ctype, body = multipart([("big", bytes(1001))])
    with pytest.raises(ServiceError) as e:
        files_of(ctype, "", body, 1000)
    assert e.value.status == 413
    ctype, body = multipart([("f%d" % i, b"") for i in range(PARTS_MAX + 1)])
    with pytest.raises(ServiceError) as e:
        files_of(ctype, "", body, LIMIT)
    assert e.value.status == 413 and str(PARTS_MAX) in str(e.value)
