"""A Python script that allocates, for `foliosim record` (scenarios/traces/README.md):
192 MiB of 4 MiB bytearrays (zero-filled: written), every page written again, half of them
freed, then 96 MiB more in 1 MiB pieces."""

chunks = [bytearray(4 << 20) for _ in range(48)]
for c in chunks:
    for i in range(0, len(c), 4096):
        c[i] = 1
del chunks[::2]
more = [bytearray(1 << 20) for _ in range(96)]
print(sum(len(c) for c in chunks + more) >> 20, "MiB")
