// zram_io: write or read a block device with O_DIRECT, timing the I/O (tools/measure/zram_codecs.sh).
//
//   zram_io write|read DEVICE MIB usemem|same CHUNK_KIB
//
// usemem: every 8-byte word holds its word index from the device start, exactly what
// vm-scalability usemem -w writes (foliosim's ContentClass::Usemem with page key = page index).
// same:   each page is one repeated non-zero word (zram stores it without compressing), the
//         baseline for per-request block-layer and zram overhead.
// Prints: "<op> <pattern> pages=N ns_per_page=X" (wall time of the pwrite/pread calls only).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void fill(uint64_t *buf, size_t words, uint64_t first_word, int same)
{
	for (size_t i = 0; i < words; i++) {
		uint64_t w = first_word + i;
		buf[i] = same ? ((w / 512) * 0x9e3779b97f4a7c15ull) | 1 : w;
	}
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: %s write|read DEVICE MIB usemem|same CHUNK_KIB\n", argv[0]);
		return 2;
	}
	int writing = strcmp(argv[1], "write") == 0;
	if (!writing && strcmp(argv[1], "read") != 0) {
		fprintf(stderr, "bad op %s\n", argv[1]);
		return 2;
	}
	size_t bytes = (size_t)strtoull(argv[3], NULL, 10) << 20;
	int same = strcmp(argv[4], "same") == 0;
	if (!same && strcmp(argv[4], "usemem") != 0) {
		fprintf(stderr, "bad pattern %s\n", argv[4]);
		return 2;
	}
	size_t chunk = (size_t)strtoull(argv[5], NULL, 10) << 10;
	if (bytes == 0 || chunk == 0 || chunk % 4096 || bytes % chunk) {
		fprintf(stderr, "MIB and CHUNK_KIB must be non-zero, CHUNK a multiple of 4 KiB dividing MIB\n");
		return 2;
	}
	int fd = open(argv[2], (writing ? O_WRONLY : O_RDONLY) | O_DIRECT);
	if (fd < 0) {
		perror(argv[2]);
		return 1;
	}
	uint64_t *buf;
	if (posix_memalign((void **)&buf, 4096, chunk)) {
		perror("posix_memalign");
		return 1;
	}
	uint64_t *want = malloc(chunk);
	uint64_t io_ns = 0;
	for (size_t off = 0; off < bytes; off += chunk) {
		if (writing)
			fill(buf, chunk / 8, off / 8, same);
		uint64_t t0 = now_ns();
		ssize_t n = writing ? pwrite(fd, buf, chunk, off) : pread(fd, buf, chunk, off);
		io_ns += now_ns() - t0;
		if (n != (ssize_t)chunk) {
			perror(writing ? "pwrite" : "pread");
			return 1;
		}
		if (!writing) {
			fill(want, chunk / 8, off / 8, same);
			if (memcmp(want, buf, chunk)) {
				fprintf(stderr, "read back differs at offset %zu\n", off);
				return 1;
			}
		}
	}
	close(fd);
	printf("%s %s pages=%zu ns_per_page=%.1f\n", argv[1], argv[4], bytes / 4096,
	       (double)io_ns / (bytes / 4096));
	return 0;
}
