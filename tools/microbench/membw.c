// Memory bandwidth of this machine, per thread and shared: each thread streams over its own
// 256 MiB buffer (larger than any cache) doing one of three kernels the simulator charges:
//   store: fill 4 KiB pages with a nonzero word (usemem's loop, clear_page's stream)
//   copy:  copy 4 KiB pages from one buffer to another (brd's copy of a swapped-out page)
// and reports bytes moved per second (store: bytes written; copy: bytes read + written),
// per thread and summed. Run: ./membw THREADS [SECONDS]
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUF (256UL << 20)
static double seconds = 2.0;
static int kernel_copy;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

struct arg { double bytes_per_s; };

static void *run(void *p) {
    struct arg *a = p;
    uint64_t *src = aligned_alloc(4096, BUF), *dst = aligned_alloc(4096, BUF);
    memset(src, 1, BUF);
    memset(dst, 1, BUF);
    double t0 = now(), t;
    uint64_t bytes = 0, v = 1;
    do {
        for (size_t off = 0; off < BUF / 8; off += 512) {
            if (kernel_copy) {
                memcpy(dst + off, src + off, 4096);
                bytes += 8192;
            } else {
                for (int i = 0; i < 512; i++)
                    dst[off + i] = v;
                bytes += 4096;
            }
        }
        v++;
        t = now();
    } while (t - t0 < seconds);
    a->bytes_per_s = bytes / (t - t0);
    free(src);
    free(dst);
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    if (argc > 2) seconds = atof(argv[2]);
    for (kernel_copy = 0; kernel_copy < 2; kernel_copy++) {
        pthread_t th[64];
        struct arg a[64];
        for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, run, &a[i]);
        double sum = 0;
        for (int i = 0; i < n; i++) {
            pthread_join(th[i], NULL);
            sum += a[i].bytes_per_s;
        }
        printf("%s threads=%d per_thread_GBps=%.2f total_GBps=%.2f ns_per_4KiB_page=%.0f\n",
               kernel_copy ? "copy " : "store", n, sum / n / 1e9, sum / 1e9,
               4096.0 * (kernel_copy ? 2 : 1) / (sum / n) * 1e9);
    }
    return 0;
}
