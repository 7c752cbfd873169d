#!/usr/bin/env python3
"""Writes the corpus of broken trace files (checked in; rerun only to change it).

It builds headers from docs/trace-format.md independently of the C++ writer,
so it also checks that the spec describes what the reader accepts.
expected.txt lists each file with the message the reader must give.
"""
import struct
import zlib


def s(text):
    b = text.encode()
    return struct.pack("<I", len(b)) + b


def body(rank=0, world=2, clock=1):
    return (struct.pack("<IIQI", rank, world, 42, 1234)
            + struct.pack("<BBBBBBH", clock, 1, 4, 0, 1, 0, 0)
            + struct.pack("<qq", 1700000000000000000, 5000)
            + s("fma4x16") + struct.pack("<Idd", 1, 1e7, 0.02)
            + s("host") + s("MPICH Version: 4.0.2") + s("0.1.0") + s("/bin/app") + s("app")
            + struct.pack("<Bdd", 0, 20.0, 0.0))  # gap clock, gap floors


def header(major=2, minor=0, **kw):
    b = body(**kw)
    return b"SKELTRC\0" + struct.pack("<HHI", major, minor, len(b)) + b


def chunk(magic=0x48434B53, payload=b"\x28\xb5\x2f\xfd garbage that is not a frame", events=3,
          rec_len=10, time_len=6, payload_len=None, base=0, crc=None):
    h = struct.pack("<IBBHIQqIII", magic, 1, 0, 0, events, 0, base, rec_len, time_len,
                    len(payload) if payload_len is None else payload_len)
    return h + struct.pack("<I", zlib.crc32(h) if crc is None else crc) + payload


files = {
    "empty.skt": (b"", "bad magic number"),
    "text.skt": (b"hello, this is a text file and not a trace\n", "bad magic number"),
    "zstd-frame.skt": (bytes.fromhex("28b52ffd2000490000") , "bad magic number"),
    "future-major.skt": (header(major=9), "trace format version 9.0 is not supported"),
    "short-header.skt": (header()[:40], "truncated header"),
    "bad-rank.skt": (header(rank=5, world=2), "corrupt header (rank 5 of world size 2)"),
    "bad-clock.skt": (header(clock=7), "unknown clock source 7"),
    "bad-chunk-magic.skt": (header() + chunk(magic=0x12345678), "bad chunk magic"),
    "corrupt-payload.skt": (header() + chunk(), "corrupt chunk 0"),
    "old-version.skt": (header(major=1, minor=4), "trace format version 1.4 is too old"),
    "bad-chunk-checksum.skt": (header() + chunk(crc=0x1234), "header checksum mismatch"),
    "flipped-base-time.skt": (header() + chunk(crc=zlib.crc32(chunk()[:40]))[:20] + struct.pack("<q", 1 << 40)
                              + chunk()[28:], "header checksum mismatch"),
    "huge-raw-size.skt": (header() + chunk(rec_len=1 << 29), "implausible size"),
    "not-a-frame.skt": (header() + chunk(payload=b"\x00" * 40), "not one checksummed zstd frame"),
}

with open("expected.txt", "w") as ex:
    ex.write("# file<TAB>message the reader must give (tests/unit/test_traceio.cpp)\n")
    for name, (data, msg) in files.items():
        with open(name, "wb") as f:
            f.write(data)
        ex.write(f"{name}\t{msg}\n")
