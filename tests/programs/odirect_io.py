"""Write and read known byte ranges of a block device with O_DIRECT (so each call is exactly
one block request), for testing the block trace. Usage: odirect_io.py DEVICE

The ranges are in OPERATIONS; the test checks the trace against the same list."""

import mmap
import os
import sys

#: (operation, offset in bytes, length in bytes); all 4 KiB-aligned, each ≤ 128 KiB.
OPERATIONS = (
    ("W", 0, 4096),
    ("W", 1 << 20, 65536),
    ("W", 8 << 20, 131072),
    ("R", 1 << 20, 65536),
    ("R", 8 << 20, 4096),
)


def main(device: str) -> None:
    fd = os.open(device, os.O_RDWR | os.O_DIRECT)
    try:
        for op, offset, length in OPERATIONS:
            buf = mmap.mmap(-1, length)  # page-aligned, as O_DIRECT needs
            if op == "W":
                buf.write(bytes([offset % 251]) * length)
                assert os.pwrite(fd, buf, offset) == length
            else:
                assert os.preadv(fd, [buf], offset) == length
            buf.close()
    finally:
        os.close(fd)


if __name__ == "__main__":
    main(sys.argv[1])
