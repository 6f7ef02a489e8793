#!/usr/bin/env python3
"""Checks tools/wireshark/tfd.lua with tshark against a pcap crafted here byte by byte.

The option bytes are written from the layout in docs/models/tfd-option.md (the same vectors
as the Rust tests in crates/core/src/ip/tfd.rs), wrapped in Ethernet + IPv4 (options area)
or Ethernet + IPv6 + Hop-by-Hop header, then UDP. Each frame's expected TFD fields and expert
messages are compared with what tshark prints.

Usage: python3 tools/wireshark/test_tfd_dissector.py [--keep DIR]
Exits 0 on success, 1 on a mismatch, 77 (skip) if tshark is not installed.
"""

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DISSECTOR = os.path.join(HERE, "tfd.lua")

B, F, D, M, L, S, E = 0x8000, 0x4000, 0x2000, 0x1000, 0x0800, 0x0400, 0x0200


def f32_bits(x):
    return struct.unpack(">I", struct.pack(">f", x))[0]


def tfd_v4(flags, next_data, next_time, length=12):
    return struct.pack(">BBHII", 0x9E, length, flags, next_data, next_time)


def tfd_v6(flags, next_data, next_time, length=10):
    return struct.pack(">BBHII", 0x1E, length, flags, next_data, next_time)


def checksum(data):
    if len(data) % 2:
        data += b"\x00"
    s = sum(struct.unpack(">%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def udp(payload, sport=5004, dport=5004):
    # Checksum 0: "not computed" is allowed for UDP over IPv4; tshark does not check it by
    # default over IPv6 either.
    return struct.pack(">HHHH", sport, dport, 8 + len(payload), 0) + payload


def ethernet(ethertype, payload):
    return b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + struct.pack(">H", ethertype) + payload


def ipv4(options, payload, proto=17):
    assert len(options) % 4 == 0 and len(options) <= 40
    ihl = 5 + len(options) // 4
    hdr = struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + len(payload), 1, 0x4000, 64, proto, 0,
                      bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])) + options
    hdr = hdr[:10] + struct.pack(">H", checksum(hdr)) + hdr[12:]
    return ethernet(0x0800, hdr + payload)


def ipv6_hbh(hbh, payload):
    assert len(hbh) % 8 == 0
    src = bytes.fromhex("fd000000000000000000000000000001")
    dst = bytes.fromhex("fd000000000000000000000000000002")
    hdr = struct.pack(">IHBB", 0x60000000, len(hbh) + len(payload), 0, 64) + src + dst
    return ethernet(0x86DD, hdr + hbh + payload)


def pcap(frames):
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)  # LINKTYPE_ETHERNET
    for i, frame in enumerate(frames):
        out += struct.pack("<IIII", 1_700_000_000 + i, 0, len(frame), len(frame)) + frame
    return out


VIDEO_V4 = tfd_v4(L | S, 1_500_000, 300)
assert VIDEO_V4.hex() == "9e0c0c000016e3600000012c"  # the Rust test vector
FLOAT_V6 = tfd_v6(F | D | E, f32_bits(1.5e6), 40)
assert FLOAT_V6.hex() == "1e0a620049b71b0000000028"  # the Rust test vector

PAYLOAD = udp(b"qoelab")

# (frame, expected tfd fields, expected substrings of the verbose output)
CASES = [
    # 1. IPv4, TFD alone in the options area: the encoder-sourced 40 Mbit/s video.
    (ipv4(VIDEO_V4, PAYLOAD),
     {"tfd.version": "4", "tfd.type": "0x9e", "tfd.len": "12", "tfd.flags": "0x0c00",
      "tfd.flags.l": "True", "tfd.flags.s": "True", "tfd.flags.b": "False", "tfd.source": "encoder",
      "tfd.next_data": "1500000", "tfd.next_time": "300", "tfd.rate": "40000000"},
     ["encoder, Next Data 1500000 B, Next Time 300 ms (4e+07 bit/s)"]),
    # 2. IPv4, NOP + Router Alert + TFD (buffer, max, all ones), EOL padding.
    (ipv4(b"\x01" + b"\x94\x04\x00\x00" + tfd_v4(B | M, 0xFFFFFFFF, 0xFFFFFFFF) + b"\x00\x00\x00", PAYLOAD),
     {"tfd.version": "4", "tfd.flags": "0x9000", "tfd.flags.b": "True", "tfd.flags.m": "True",
      "tfd.source": "buffer", "tfd.next_data": "4294967295", "tfd.next_time": "4294967295"},
     []),
    # 3. IPv6 Hop-by-Hop: Next Header 17, Hdr Ext Len 1, PadN(0), TFD at offset 4 (as
    #    qoelab's ipv6_hop_by_hop builds it), forecast float 1.5e6 bytes in 40 ms.
    (ipv6_hbh(bytes([17, 1, 1, 0]) + FLOAT_V6, PAYLOAD),
     {"tfd.version": "6", "tfd.type": "0x1e", "tfd.len": "10", "tfd.flags": "0x6200",
      "tfd.flags.f": "True", "tfd.flags.d": "True", "tfd.flags.e": "True", "tfd.source": "forecast",
      "tfd.next_data_float": "1500000", "tfd.next_time": "40", "tfd.rate": "300000000"},
     ["forecast, Next Data 1500000 B, Next Time 40 ms (3e+08 bit/s)"]),
    # 4. IPv4, B and F both set: flagged.
    (ipv4(tfd_v4(B | F, 1000, 300), PAYLOAD),
     {"tfd.source": "buffer+forecast (invalid)", "tfd.next_data": "1000"},
     ["TFD flags B and F are both set"]),
    # 5. IPv4, a reserved bit set: flagged.
    (ipv4(tfd_v4(L | 0x0001, 1000, 300), PAYLOAD),
     {"tfd.flags.reserved": "0x0001"},
     ["TFD reserved flag bits are set"]),
    # 6. IPv6, D with a NaN: flagged, no rate.
    (ipv6_hbh(bytes([17, 1, 1, 0]) + tfd_v6(D, 0x7FC00000, 300), PAYLOAD),
     {"tfd.version": "6", "tfd.flags.d": "True", "tfd.rate": ""},
     ["Next Data float is NaN, infinite or negative", "Next Data invalid B"]),
    # 7. IPv6, D with -1.0: flagged.
    (ipv6_hbh(bytes([17, 1, 1, 0]) + tfd_v6(D, f32_bits(-1.0), 300), PAYLOAD),
     {"tfd.next_data_float": "-1"},
     ["Next Data float is NaN, infinite or negative"]),
    # 8. IPv4, the IPv6 length value (10) under the IPv4 type: flagged as wrong length/short.
    (ipv4(tfd_v4(0, 1, 1, length=10)[:10] + b"\x00\x00", PAYLOAD),
     {"tfd.len": "10"},
     ["TFD length is 10, expected 12", "TFD option shorter than 12 octets"]),
    # 9. IPv4 without options, and IPv4 whose option 0x1E (same number, copy flag clear) is
    #    another experiment: no TFD.
    (ipv4(b"", PAYLOAD), None, []),
    (ipv4(b"\x1e\x04\xaa\xbb", PAYLOAD), None, []),
]

FIELDS = ["tfd.version", "tfd.type", "tfd.len", "tfd.flags", "tfd.flags.b", "tfd.flags.f", "tfd.flags.d",
          "tfd.flags.m", "tfd.flags.l", "tfd.flags.s", "tfd.flags.e", "tfd.flags.reserved", "tfd.source",
          "tfd.next_data", "tfd.next_data_float", "tfd.next_time", "tfd.rate"]


def run_tshark(pcap_path, *args):
    cmd = ["tshark", "-n", "-X", "lua_script:" + DISSECTOR, "-r", pcap_path, *args]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    # tshark prints Lua errors on stderr but may still exit 0.
    if res.returncode != 0 or "Lua: Error" in res.stderr or "lua_script" in res.stderr:
        sys.exit("tshark failed (%d):\n%s" % (res.returncode, res.stderr))
    return res.stdout


def normalise(value):
    # Booleans print as 1/0 (tshark 4.0) or True/False (later); numbers as "1500000" or
    # "1.5e+06" depending on version: compare meanings, not spellings.
    value = {"True": "1", "False": "0"}.get(value, value)
    try:
        return repr(float(value))
    except ValueError:
        return value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", help="write the pcap into this directory and keep it")
    args = parser.parse_args()
    if shutil.which("tshark") is None:
        print("tshark not installed: skipped")
        return 77

    workdir = args.keep or tempfile.mkdtemp(prefix="tfd-dissector-")
    os.makedirs(workdir, exist_ok=True)
    pcap_path = os.path.join(workdir, "tfd.pcap")
    with open(pcap_path, "wb") as fh:
        fh.write(pcap([frame for frame, _, _ in CASES]))

    table = run_tshark(pcap_path, "-T", "fields", "-E", "separator=|", "-E", "occurrence=f",
                       *sum((["-e", name] for name in FIELDS), []))
    rows = table.rstrip("\n").split("\n")
    failures = []
    if len(rows) != len(CASES):
        failures.append("expected %d rows, got %d:\n%s" % (len(CASES), len(rows), table))
    failed_checks = 0
    for n, ((_, expected, texts), row) in enumerate(zip(CASES, rows), start=1):
        before = len(failures)
        got = dict(zip(FIELDS, row.split("|")))
        if expected is None:
            if any(got.values()):
                failures.append("frame %d: expected no TFD option, got %s" % (n, got))
        else:
            for name, value in expected.items():
                if normalise(got.get(name, "")) != normalise(value):
                    failures.append("frame %d: %s = %r, expected %r" % (n, name, got.get(name), value))
        if texts:
            verbose = run_tshark(pcap_path, "-V", "-Y", "frame.number == %d" % n)
            for text in texts:
                if text not in verbose:
                    failures.append("frame %d: %r not in the verbose output" % (n, text))
        failed_checks += len(failures) > before

    # The display filter works on the new protocol: frames 1-8 carry the option.
    frames = run_tshark(pcap_path, "-Y", "tfd", "-T", "fields", "-e", "frame.number").split()
    if frames != [str(n) for n in range(1, 9)]:
        failures.append("filter 'tfd' matched frames %s, expected 1-8" % frames)
        failed_checks += 1

    for failure in failures:
        print("FAIL", failure)
    # One check per frame, plus the display filter.
    print("%d passed, %d failed" % (len(CASES) + 1 - failed_checks, failed_checks))
    if not args.keep:
        shutil.rmtree(workdir)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
