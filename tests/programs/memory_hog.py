"""Touch MIB mebibytes of anonymous memory, then read every page back: under a smaller cap
with swap it pages out and back in (major faults); without swap it is OOM-killed.
Usage: memory_hog.py MIB"""

import sys

PAGE_BYTES = 4096


def main(mib: int) -> None:
    block = bytearray(mib << 20)
    for offset in range(0, len(block), PAGE_BYTES):
        block[offset] = 1  # make every page resident (and dirty, so it must go to swap)
    total = 0
    for offset in range(0, len(block), PAGE_BYTES):
        total += block[offset]  # read it back: pages that were swapped out fault in
    assert total == len(block) // PAGE_BYTES
    print(f"touched {mib} MiB")


if __name__ == "__main__":
    main(int(sys.argv[1]))
