// What an IPI costs the CPU that receives it, apart from what `foliosim calibrate --live
// --hw-only` could mistake for it. A receiver thread pinned to CPU 1 reads a shared page and
// the clock in a loop and keeps every gap over 250 ns; a sender pinned to CPU 0 meanwhile
//   idle:       sleeps (the gaps the receiver sees anyway: timer ticks, host preemption)
//   mprotect:   mprotect RW->R->RW of the page (a TLB shootdown IPI: the flush runs)
//   membarrier: membarrier(PRIVATE_EXPEDITED) (an IPI whose handler is one smp_mb: no flush)
// and the IPIs delivered to CPU 1 are counted in /proc/interrupts (TLB and CAL rows). If the
// gaps are as many as the IPIs and of one size with or without the flush, that size is the
// delivery's own cost. Run: ./ipi_gap MODE [SECONDS]
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_GAPS (1 << 20)
static volatile int stop;
static volatile char *page;
static double gaps[MAX_GAPS];
static long ngaps;

static uint64_t ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000ull + t.tv_nsec;
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof s, &s);
}

// The count of row `row` on CPU 1.
static long irqs(const char *row) {
    FILE *f = fopen("/proc/interrupts", "r");
    char line[4096];
    long n = -1, c0;
    while (f && fgets(line, sizeof line, f)) {
        char name[32];
        if (sscanf(line, " %31[^:]: %ld %ld", name, &c0, &n) == 3 && !strcmp(name, row))
            break;
        n = -1;
    }
    if (f)
        fclose(f);
    return n;
}

static void *receive(void *arg) {
    (void)arg;
    pin(1);
    uint64_t last = ns();
    while (!stop) {
        (void)page[0];
        uint64_t now = ns();
        if (now - last > 250 && ngaps < MAX_GAPS)
            gaps[ngaps++] = now - last;
        last = now;
    }
    return NULL;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "idle";
    double secs = argc > 2 ? atof(argv[2]) : 1.0;
    page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    page[0] = 1;
    pin(0);
    if (!strcmp(mode, "membarrier"))
        syscall(SYS_membarrier, 16, 0, 0); // REGISTER_PRIVATE_EXPEDITED
    pthread_t t;
    pthread_create(&t, NULL, receive, NULL);
    usleep(20000);
    long tlb0 = irqs("TLB"), cal0 = irqs("CAL"), ops = 0;
    uint64_t end = ns() + (uint64_t)(secs * 1e9);
    while (ns() < end) {
        if (!strcmp(mode, "mprotect")) {
            mprotect((void *)page, 4096, PROT_READ);
            mprotect((void *)page, 4096, PROT_READ | PROT_WRITE);
        } else if (!strcmp(mode, "membarrier")) {
            syscall(SYS_membarrier, 8, 0, 0); // PRIVATE_EXPEDITED
        } else {
            usleep(1000);
        }
        ops++;
    }
    long tlb = irqs("TLB") - tlb0, cal = irqs("CAL") - cal0;
    stop = 1;
    pthread_join(t, NULL);
    qsort(gaps, ngaps, sizeof gaps[0], cmp);
    double p = ngaps ? gaps[ngaps / 2] : 0;
    printf("%s: %ld ops, CPU1 got %ld TLB + %ld CAL IPIs, %ld gaps > 250 ns: p10 %.0f, "
           "median %.0f, p90 %.0f ns\n",
           mode, ops, tlb, cal, ngaps, ngaps ? gaps[ngaps / 10] : 0, p,
           ngaps ? gaps[ngaps * 9 / 10] : 0);
    return 0;
}
