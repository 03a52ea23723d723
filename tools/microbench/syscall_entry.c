// Entry and exit of a memory syscall besides its work (the cost model's `syscall_ns`): times
// three calls that do almost nothing else, one thread, ROUNDS rounds of N calls, and prints
// each call's median and minimum ns over the rounds:
//   getppid:        bare entry and exit (no mm work)
//   madvise-normal: madvise(MADV_NORMAL) of one mapped 4 KiB page: entry, mmap_lock read,
//                   VMA lookup, no flag change, exit
//   mprotect-same:  mprotect of one mapped page to its current protection: entry, mmap_lock
//                   write, VMA lookup, no change, exit
// Run: ./syscall_entry [N] [ROUNDS]
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static char *page;

static void call(int which) {
    switch (which) {
    case 0: syscall(SYS_getppid); break;
    case 1: madvise(page, 4096, MADV_NORMAL); break;
    default: mprotect(page, 4096, PROT_READ | PROT_WRITE); break;
    }
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 200000;
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    const char *names[] = {"getppid", "madvise-normal", "mprotect-same"};
    page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return perror("mmap"), 1;
    page[0] = 1;
    double *per = calloc(rounds, sizeof *per);
    for (int which = 0; which < 3; which++) {
        for (int r = 0; r < rounds; r++) {
            double t0 = now_ns();
            for (long i = 0; i < n; i++) call(which);
            per[r] = (now_ns() - t0) / n;
        }
        qsort(per, rounds, sizeof *per, cmp);
        printf("%-15s median %6.0f ns  min %6.0f ns  (%d rounds of %ld)\n", names[which],
               per[rounds / 2], per[0], rounds, n);
    }
    return 0;
}
