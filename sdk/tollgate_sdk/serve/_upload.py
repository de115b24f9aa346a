"""The files of a POST /files body, as an untrusted client sent them: a
multipart/form-data body (what the e2b SDKs send) or the bytes of one
file, either possibly gzip'd.  Bounded in what it makes of the body, not
only in the body's own size: a gzip'd body is inflated only up to the
file limit (a 2 MiB body of zeros inflated to 2 GiB before, and the
service's memory went with it), and multipart parts are cut out of the
body as slices (the email parser made a dozen copies of a 64 MiB
upload)."""
from __future__ import annotations

import base64
import binascii
import email.parser
import email.policy
import zlib

from ._service_error import ServiceError

__all__ = ["files_of", "PARTS_MAX"]

PARTS_MAX = 1000   # files in one upload


def files_of(ctype: str, encoding: str, body: bytes, limit: int) -> list[tuple[str | None, bytes]]:
    """(filename, data) for each file of the body (filename None for a
    body that is one file's bytes).  Each data is at most limit bytes;
    413 or 400 otherwise, naming the problem."""
    if encoding.strip().lower() == "gzip":
        body = gunzip(body, limit + (1 << 20))
    elif encoding.strip().lower() not in ("", "identity"):
        raise ServiceError(415, "Content-Encoding %r is not taken here: send gzip or none" % encoding)
    if ctype.lower().startswith("multipart/form-data"):
        return list(_parts(ctype, body, limit))
    if len(body) > limit:
        raise ServiceError(413, "a file is at most %d bytes" % limit)
    return [(None, body)]


def gunzip(body: bytes, limit: int) -> bytes:
    """body inflated (one gzip member or several), at most limit bytes."""
    out: list[bytes] = []
    n, rest = 0, body
    while rest:
        d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            chunk = d.decompress(rest, limit - n + 1)
        except zlib.error:
            raise ServiceError(400, "the body is not gzip") from None
        n += len(chunk)
        if n > limit or d.unconsumed_tail:
            raise ServiceError(413, "the body inflates to over %d bytes" % limit)
        if not d.eof:
            raise ServiceError(400, "the gzip body ends early")
        out.append(chunk)
        rest = d.unused_data
    return b"".join(out)


def _boundary(ctype: str) -> bytes:
    msg = email.parser.HeaderParser(policy=email.policy.HTTP).parsestr("Content-Type: %s\r\n\r\n" % ctype)
    b = msg.get_param("boundary")
    if not isinstance(b, str) or not 1 <= len(b) <= 200:
        raise ServiceError(400, "a multipart body needs a boundary of 1 to 200 characters")
    try:
        return b.encode("ascii")
    except UnicodeEncodeError:
        raise ServiceError(400, "the multipart boundary is not ASCII") from None


def _parts(ctype: str, body: bytes, limit: int) -> list[tuple[str | None, bytes]]:
    delim = b"--" + _boundary(ctype)
    at = body.find(delim)
    if at < 0:
        raise ServiceError(400, "a multipart body without parts")
    out: list[tuple[str | None, bytes]] = []
    while True:
        at += len(delim)
        if body.startswith(b"--", at):
            break
        head_end = body.find(b"\r\n\r\n", at)
        if head_end < 0:
            raise ServiceError(400, "a multipart part without the blank line after its headers")
        end = body.find(b"\r\n" + delim, head_end + 4)
        if end < 0:
            raise ServiceError(400, "a multipart part that is not closed by the boundary")
        headers = email.parser.BytesHeaderParser(policy=email.policy.HTTP).parsebytes(
            body[at:head_end + 4].lstrip(b" \t").removeprefix(b"\r\n"))
        name = headers.get_filename()
        if name is not None:
            if len(out) >= PARTS_MAX:
                raise ServiceError(413, "an upload is at most %d files" % PARTS_MAX)
            if end - (head_end + 4) > 2 * limit:
                raise ServiceError(413, "a file is at most %d bytes" % limit)
            data = body[head_end + 4:end]
            if str(headers.get("content-transfer-encoding", "")).strip().lower() == "base64":
                try:
                    data = base64.b64decode(data)
                except (binascii.Error, ValueError):
                    raise ServiceError(400, "a base64 part that is not base64") from None
            if len(data) > limit:
                raise ServiceError(413, "a file is at most %d bytes" % limit)
            out.append((name, data))
        at = end + 2
    if not out:
        raise ServiceError(400, "the upload has no file part")
    return out
