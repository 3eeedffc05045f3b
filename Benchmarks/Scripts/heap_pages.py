#!/usr/bin/env python3
"""What keeps the pages of a process's main malloc heap resident: `heap_pages.py PID`.

Walks glibc's main arena chunk by chunk through /proc/PID/mem (x86-64, glibc 2.26 or later: a chunk
is a size word after a prev_size word; a chunk is in use when the next one's PREV_INUSE bit is set),
takes the resident pages from /proc/PID/pagemap, and names each block in use: a Swift object by the
type metadata its first word points to (symbols of the mapped files, through llvm-nm and
swift-demangle), anything else by its chunk size. It prints, for each kind of block, how many are in
use, their bytes, and the resident pages on which only blocks of that kind are in use (the pages a
free of every such block would let malloc_trim give back) — then the free-but-resident pages (free
chunks whose pages malloc_trim has not returned yet) and the resident pages by how many blocks hold them.

Tcache and fastbin chunks count as in use (glibc marks them so); run it after a trim. Read-only,
but run it at the end of a measurement: it stops nothing, yet reading a page-out page faults it in.
"""
import bisect
import collections
import os
import struct
import subprocess
import sys

PAGE = os.sysconf("SC_PAGE_SIZE")


def mappings(pid):
    """(start, end, offset, path) of every mapping."""
    result = []
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split("-"))
            path = fields[5] if len(fields) > 5 else ""
            result.append((start, end, int(fields[2], 16), path))
    return result


class Symbols:
    """Addresses in the mapped ELF files to their (demangled) data symbols."""

    def __init__(self, pid, maps):
        self.starts, self.names = [], []
        bases = {}
        for start, _, offset, path in maps:
            if path.startswith("/") and offset == 0 and path not in bases:
                bases[path] = start
        entries = []
        for path, base in bases.items():
            try:
                out = subprocess.run(["llvm-nm", "--defined-only", "-n", path], capture_output=True, text=True).stdout
            except OSError:
                continue
            # PIE and shared objects: symbol values are offsets from the first mapping.
            for line in out.splitlines():
                parts = line.split(" ", 2)
                if len(parts) == 3 and parts[1] in "dDbBrRsS" and parts[2].startswith("$s"):
                    entries.append((base + int(parts[0], 16), parts[2]))
        entries.sort()
        mangled = [name for _, name in entries]
        demangled = subprocess.run(
            ["swift-demangle", "--simplified"], input="\n".join(mangled), capture_output=True, text=True
        ).stdout.splitlines()
        if len(demangled) != len(mangled):
            demangled = mangled
        self.starts = [address for address, _ in entries]
        self.names = demangled

    def name(self, address):
        index = bisect.bisect_right(self.starts, address) - 1
        if index < 0 or address - self.starts[index] > 4096:
            return None
        name = self.names[index]
        for prefix in ("full type metadata for ", "type metadata for ", "full type metadata pattern for "):
            if name.startswith(prefix):
                return name[len(prefix):]
        return None


def main():
    pid = int(sys.argv[1])
    maps = mappings(pid)
    heap = next(((s, e) for s, e, _, p in maps if p == "[heap]"), None)
    if heap is None:
        print("no [heap] mapping")
        return
    start, end = heap
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        pagemap.seek(start // PAGE * 8)
        raw = pagemap.read((end - start) // PAGE * 8)
    resident = [bool(struct.unpack_from("<Q", raw, i * 8)[0] >> 63) for i in range((end - start) // PAGE)]
    with open(f"/proc/{pid}/mem", "rb") as mem:
        mem.seek(start)
        data = mem.read(end - start)
    symbols = Symbols(pid, maps)

    def word(offset):
        return struct.unpack_from("<Q", data, offset)[0]

    # glibc puts the first chunk at the heap's start, aligned so its user memory is 16-byte aligned.
    chunk = (16 - (start + 16) % 16) % 16
    blocks = []  # (offset, size, kind) of chunks in use
    free_bytes = 0
    free_pages = set()
    while chunk + 16 <= len(data):
        size = word(chunk + 8) & ~7
        if size < 32 or chunk + size > len(data):
            break  # the top chunk's end, or a walk gone astray
        following = chunk + size
        in_use = following + 16 <= len(data) and word(following + 8) & 1
        if following + 16 > len(data):
            in_use = False  # the top chunk
        if in_use:
            kind = symbols.name(word(chunk + 16))
            if kind is None:
                # Zeroed small blocks are mostly libevent's per-descriptor slots (evmap_io) of closed descriptors.
                zeroed = size <= 64 and not any(data[chunk + 16 : chunk + size])
                kind = f"{size}-byte chunk" + (", zeroed" if zeroed else "")
            blocks.append((chunk, size, kind))
        else:
            free_bytes += size
            first = (chunk + 32 + PAGE - 1) // PAGE
            for page in range(first, following // PAGE):
                if resident[page]:
                    free_pages.add(page)
        chunk = following

    on_page = collections.defaultdict(set)
    count, size_of = collections.Counter(), collections.Counter()
    for offset, size, kind in blocks:
        count[kind] += 1
        size_of[kind] += size
        for page in range(offset // PAGE, (offset + size - 1) // PAGE + 1):
            if page < len(resident) and resident[page]:
                on_page[page].add(kind)
    alone = collections.Counter()
    share = collections.Counter()
    holders = collections.Counter()
    for page, kinds in on_page.items():
        holders[min(len(kinds), 5)] += 1
        if len(kinds) == 1:
            alone[next(iter(kinds))] += 1
        for kind in kinds:
            share[kind] += 1 / len(kinds)
    mib = 1024 * 1024
    print(
        f"main heap: {(end - start) / mib:.1f} MiB mapped, {sum(resident) * PAGE / mib:.1f} MiB resident; "
        f"{len(blocks)} blocks in use, {sum(s for _, s, _ in blocks) / mib:.2f} MiB; free chunks {free_bytes / mib:.1f} MiB, "
        f"of it resident whole pages {len(free_pages) * PAGE / mib:.1f} MiB"
    )
    print(f"resident pages holding blocks in use: {len(on_page)} ({len(on_page) * PAGE / mib:.1f} MiB); by kinds of block on the page: "
          + ", ".join(f"{k}{'+' if k == 5 else ''}: {v}" for k, v in sorted(holders.items())))
    print()
    print("| kind of block in use | blocks | KiB | resident pages held alone | page share |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for kind, _ in sorted(share.items(), key=lambda item: -item[1])[:40]:
        print(f"| {kind[:110]} | {count[kind]} | {size_of[kind] / 1024:.0f} | {alone[kind]} | {share[kind]:.0f} |")


if __name__ == "__main__":
    main()
