#!/usr/bin/env python3
"""Rewrites a valid rank file (.skt) so that every chunk's payload is a zstd
frame of raw (stored) blocks: a fuzzer's byte mutations of the payload then
reach the record decoder directly (the fuzzing build skips the checksums).
Needs the zstd command.   make_raw_seed.py IN.skt OUT.skt"""
import struct
import subprocess
import sys
import zlib

HEADER, CRC_AT = 44, 40


def raw_frame(content):
    """A single-segment frame, 4-byte content size, checksum flag set
    (checksum zeroed: the fuzzing build ignores it), raw blocks of 128 KiB."""
    out = b"\x28\xb5\x2f\xfd" + bytes([0xA4]) + struct.pack("<I", len(content))
    blocks = [content[i:i + 131072] for i in range(0, len(content), 131072)] or [b""]
    for n, b in enumerate(blocks):
        last = 1 if n == len(blocks) - 1 else 0
        out += (last | (len(b) << 3)).to_bytes(3, "little") + b
    return out + b"\0\0\0\0"


def main(src, dst):
    data = open(src, "rb").read()
    body_len = struct.unpack_from("<I", data, 12)[0]
    pos = 16 + body_len
    out = bytearray(data[:pos])
    while pos + HEADER <= len(data):
        head = bytearray(data[pos:pos + HEADER])
        payload_len = struct.unpack_from("<I", head, 36)[0]
        payload = data[pos + HEADER:pos + HEADER + payload_len]
        if payload_len:
            content = subprocess.run(["zstd", "-dc"], input=payload, capture_output=True, check=True).stdout
            payload = raw_frame(content)
            struct.pack_into("<I", head, 36, len(payload))
            struct.pack_into("<I", head, CRC_AT, zlib.crc32(bytes(head[:CRC_AT])))
        out += head + payload
        pos += HEADER + payload_len
    open(dst, "wb").write(bytes(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
