"""Prepare step of Ginkgo CADx (runs in the container, on its python3 without pydicom): a
study that is NOT in the history, for the task that opens a file from the history window.

Writes OUT_FILE: the first image of FIXTURES_DIR/ct-chest as a fourth patient,
PHANTOM^DAVE (CG0004, ACC1004), with its own study, series and instance UIDs (derived
from the originals, so every run writes the same bytes, with a fixed modification
time). The fixture files are
Explicit VR Little Endian without sequences: elements are rewritten one by one.

Usage: python3 incoming_study.py FIXTURES_DIR OUT_FILE
"""
import hashlib
import os
import struct
import sys

STAMP = 1710756900   # 2024-03-18 10:15:00 UTC, as the history's rows
LONG_VRS = {b"OB", b"OD", b"OF", b"OL", b"OV", b"OW", b"SQ", b"UC", b"UN", b"UR", b"UT"}
UIDS = {(0x0002, 0x0003), (0x0008, 0x0018), (0x0020, 0x000D), (0x0020, 0x000E), (0x0020, 0x0052)}
VALUES = {(0x0010, 0x0010): b"PHANTOM^DAVE", (0x0010, 0x0020): b"CG0004",
          (0x0010, 0x0030): b"19600404", (0x0010, 0x0040): b"M",
          (0x0008, 0x0050): b"ACC1004", (0x0020, 0x0010): b"1004"}


def new_uid(old):
    """A UID of the 2.25 form (at most 44 characters) that depends only on the old one."""
    digest = hashlib.sha256(b"PHANTOM^DAVE " + old.rstrip(b"\0 ")).hexdigest()
    return b"2.25.%d" % (int(digest[:32], 16))


def read(data, pos, end):
    """(tag, vr, value) of each element from pos to end."""
    while pos < end:
        group, element = struct.unpack_from("<HH", data, pos)
        vr = data[pos + 4:pos + 6]
        if vr in LONG_VRS:
            length, head = struct.unpack_from("<I", data, pos + 8)[0], 12
        else:
            length, head = struct.unpack_from("<H", data, pos + 6)[0], 8
        if length == 0xFFFFFFFF:
            sys.exit("undefined length element (%04x,%04x): not supported" % (group, element))
        yield (group, element), vr, data[pos + head:pos + head + length]
        pos += head + length


def write(tag, vr, value):
    if len(value) % 2:
        value += b"\0" if vr == b"UI" else b" "
    if vr in LONG_VRS:
        return struct.pack("<HH2sHI", tag[0], tag[1], vr, 0, len(value)) + value
    return struct.pack("<HH2sH", tag[0], tag[1], vr, len(value)) + value


def rewrite(items):
    out = []
    for tag, vr, value in items:
        if tag in UIDS:
            value = new_uid(value)
        elif tag in VALUES:
            value = VALUES[tag]
        out.append(write(tag, vr, value))
    return b"".join(out)


def main():
    fixtures, out_file = sys.argv[1], sys.argv[2]
    with open(os.path.join(fixtures, "ct-chest", "IMG0001.dcm"), "rb") as f:
        data = f.read()
    if data[128:132] != b"DICM":
        sys.exit("not a DICOM Part 10 file")
    group_length = struct.unpack_from("<I", data, 132 + 8)[0]
    meta_end = 132 + 12 + group_length
    meta = rewrite([e for e in read(data, 132, meta_end) if e[0] != (0x0002, 0x0000)])
    body = rewrite(read(data, meta_end, len(data)))
    os.makedirs(os.path.dirname(out_file), exist_ok=True)
    with open(out_file, "wb") as f:
        f.write(data[:132] + write((0x0002, 0x0000), b"UL", struct.pack("<I", len(meta))) + meta + body)
    os.utime(out_file, (STAMP, STAMP))   # the file chooser shows the modification time
    print("wrote %s" % out_file)


if __name__ == "__main__":
    main()
