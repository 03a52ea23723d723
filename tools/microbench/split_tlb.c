// split_tlb.c - microbenchmark: cost of splitting anonymous large folios and
// cost of a TLB shootdown (local vs. with one remote CPU running the mm).
//
// Needs root, debugfs mounted at /sys/kernel/debug, 2+ CPUs. The mTHP sysfs
// settings (hugepages-<size>kB/enabled) are applied by run_split_tlb.sh; this
// program only checks, via the per-size stats, that folios of the expected
// size were allocated and split.
//
// Usage:
//   split_tlb split <free|debugfs> <folio_kb> <stride_kb> <mib> <remote 0|1> <reps> [zero] [ptemap]
//       mmap+touch <mib> MiB of anon memory (2 MiB aligned), then split every
//       folio and time it. free: madvise(MADV_FREE) of one 4 KiB page every
//       <stride_kb> (partial-folio MADV_FREE splits the folio synchronously);
//       debugfs: one write of "<pid>,0x<start>,0x<end>" to
//       /sys/kernel/debug/split_huge_pages (blocked under kernel lockdown).
//       folio_kb=4 means "no large folios" (baseline: same calls, no split).
//       zero:   leave page contents zero (default writes a nonzero byte to
//               every 4 KiB page, so split does not remap subpages to the
//               shared zero page).
//       ptemap: (2048 only) PTE-map every PMD THP first (mprotect of one
//               4 KiB page and back), so the split is of a PTE-mapped 2M folio.
//   split_tlb tlb <mprotect|nopte|madvise> <remote 0|1> <iters> <reps>
//       mprotect: toggle PROT_READ / PROT_READ|PROT_WRITE on one touched
//                 page (own VMA between PROT_NONE guards); 1 flush per call.
//       nopte:    same on an untouched page: no PTE, so no flush (baseline).
//       madvise:  write the page, then MADV_DONTNEED it; 1 flush per iter.
//
// remote=1: a second thread of the same process spins on CPU 1 reading a
// private 64 KiB buffer (so the mm is live on CPU 1 and every flush of this
// mm must IPI CPU 1) while the main thread runs on CPU 0. remote=0: the
// process is single-threaded and pinned to CPU 0. remote=2 (control): CPU 1
// runs a spinning child PROCESS (different mm, so no IPI is needed).
// The number of TLB-shootdown IPIs received by CPU 1 is read from the
// "TLB:" line of /proc/interrupts.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PG 4096UL
#define PMD (2UL << 20)

static void die(const char *m) { perror(m); exit(1); }

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s))
		die("sched_setaffinity");
}

static long long read_ll(const char *path)
{
	FILE *f = fopen(path, "r");
	long long v = -1;
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static long long vmstat(const char *key)
{
	FILE *f = fopen("/proc/vmstat", "r");
	char k[128];
	long long v, r = -1;
	if (!f)
		return -1;
	while (fscanf(f, "%127s %lld", k, &v) == 2)
		if (!strcmp(k, key)) { r = v; break; }
	fclose(f);
	return r;
}

// TLB shootdowns received by cpu (from /proc/interrupts "TLB:" line)
static long long tlb_irqs(int cpu)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[4096];
	long long r = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;
		while (*p == ' ')
			p++;
		if (strncmp(p, "TLB:", 4))
			continue;
		p += 4;
		for (int c = 0; c <= cpu; c++)
			r = strtoll(p, &p, 10);
		break;
	}
	fclose(f);
	return r;
}

static long long mthp_stat(int kb, const char *name)
{
	char path[256];
	snprintf(path, sizeof(path),
		 "/sys/kernel/mm/transparent_hugepage/hugepages-%dkB/stats/%s", kb, name);
	return read_ll(path);
}

/* ---- remote spinner ---- */
static atomic_int stop_spin, spin_ready;
static void *spinner(void *arg)
{
	(void)arg;
	pin(1);
	volatile char *buf = malloc(65536);
	for (size_t i = 0; i < 65536; i += 64)
		buf[i] = 1;
	atomic_store(&spin_ready, 1);
	unsigned long sum = 0;
	while (!atomic_load_explicit(&stop_spin, memory_order_relaxed))
		for (size_t i = 0; i < 65536; i += 64)
			sum += buf[i];
	return (void *)sum;
}

static pthread_t start_remote(void)
{
	pthread_t t;
	atomic_store(&stop_spin, 0);
	atomic_store(&spin_ready, 0);
	if (pthread_create(&t, NULL, spinner, NULL))
		die("pthread_create");
	while (!atomic_load(&spin_ready))
		;
	usleep(20000);
	return t;
}

static void stop_remote(pthread_t t)
{
	atomic_store(&stop_spin, 1);
	pthread_join(t, NULL);
}

// control: CPU 1 busy with a DIFFERENT process (its mm is not ours, so no
// IPI is needed); separates "CPU 1 busy" effects from the shootdown itself.
static pid_t start_busy_proc(void)
{
	pid_t c = fork();
	if (c < 0)
		die("fork");
	if (c == 0) {
		pin(1);
		volatile char buf[4096];
		unsigned long sum = 0;
		for (;;)
			for (size_t i = 0; i < sizeof(buf); i += 64)
				sum += buf[i];
	}
	usleep(50000);
	return c;
}

static void stop_busy_proc(pid_t c)
{
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
}

// remote: 0 = single thread on CPU 0, 1 = second thread of this mm spinning
// on CPU 1, 2 = another process spinning on CPU 1 (control)
struct remote { int kind; pthread_t t; pid_t pid; };
static void remote_start(struct remote *r, int kind)
{
	r->kind = kind;
	if (kind == 1)
		r->t = start_remote();
	else if (kind == 2)
		r->pid = start_busy_proc();
}
static void remote_stop(struct remote *r)
{
	if (r->kind == 1)
		stop_remote(r->t);
	else if (r->kind == 2)
		stop_busy_proc(r->pid);
}

/* ---- split ---- */
// method "free": for every folio, MADV_FREE one 4 KiB page inside it. A
// partial-folio MADV_FREE calls split_folio() synchronously
// (madvise_free_pte_range / madvise_free_huge_pmd). The same loop over 4 KiB
// folios (folio_kb=4, same stride) is the baseline to subtract.
// method "debugfs": one write to /sys/kernel/debug/split_huge_pages
// (blocked under kernel lockdown).
static int do_split(int argc, char **argv)
{
	if (argc < 8) {
		fprintf(stderr, "split <free|debugfs> <folio_kb> <stride_kb> <mib> <remote> <reps> [zero] [ptemap]\n");
		return 2;
	}
	int debugfs = !strcmp(argv[2], "debugfs");
	int kb = atoi(argv[3]);
	size_t stride = (size_t)atoi(argv[4]) * 1024;
	size_t len = (size_t)atoll(argv[5]) << 20;
	int remote = atoi(argv[6]), reps = atoi(argv[7]);
	int zero = 0, ptemap = 0;
	for (int i = 8; i < argc; i++) {
		if (!strcmp(argv[i], "zero")) zero = 1;
		if (!strcmp(argv[i], "ptemap")) ptemap = 1;
	}
	pin(0);
	int fd = -1;
	if (debugfs) {
		fd = open("/sys/kernel/debug/split_huge_pages", O_WRONLY);
		if (fd < 0)
			die("open /sys/kernel/debug/split_huge_pages");
	}
	struct remote rem;
	remote_start(&rem, remote);

	printf("# mode=split method=%s folio_kb=%d stride_kb=%zu mib=%zu remote=%d zero=%d ptemap=%d\n",
	       debugfs ? "debugfs" : "free", kb, stride / 1024, len >> 20, remote, zero, ptemap);
	printf("# rep ns_total calls folios_alloc folios_split split_pmd ipis_cpu1 ns_per_call\n");
	for (int r = 0; r < reps; r++) {
		char *raw = mmap(NULL, len + PMD, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (raw == MAP_FAILED)
			die("mmap");
		char *p = (char *)(((uintptr_t)raw + PMD - 1) & ~(PMD - 1));
		long long fa0 = kb > 4 ? mthp_stat(kb, "anon_fault_alloc") : 0;
		for (size_t o = 0; o < len; o += PG)
			p[o] = zero ? 0 : (char)(1 + (o >> 12) % 251);
		long long fa1 = kb > 4 ? mthp_stat(kb, "anon_fault_alloc") : 0;
		if (ptemap) {
			long long sp0 = vmstat("thp_split_pmd");
			for (size_t o = 0; o < len; o += PMD) {
				if (mprotect(p + o + PMD - PG, PG, PROT_READ) ||
				    mprotect(p + o + PMD - PG, PG, PROT_READ | PROT_WRITE))
					die("mprotect");
			}
			fprintf(stderr, "ptemap: thp_split_pmd +%lld\n",
				vmstat("thp_split_pmd") - sp0);
		}
		usleep(50000);
		long long s0 = kb > 4 ? mthp_stat(kb, "split") : 0;
		long long pmd0 = vmstat("thp_split_pmd");
		long long i0 = tlb_irqs(1);
		long calls = 0;
		uint64_t t0 = now_ns();
		if (debugfs) {
			char cmd[128];
			int n = snprintf(cmd, sizeof(cmd), "%d,0x%lx,0x%lx", getpid(),
					 (unsigned long)p, (unsigned long)(p + len));
			if (write(fd, cmd, n) != n)
				die("write split_huge_pages");
			calls = 1;
		} else {
			for (size_t o = 0; o < len; o += stride, calls++)
				if (madvise(p + o, PG, MADV_FREE))
					die("madvise(MADV_FREE)");
		}
		uint64_t t1 = now_ns();
		long long i1 = tlb_irqs(1);
		long long pmd1 = vmstat("thp_split_pmd");
		long long s1 = kb > 4 ? mthp_stat(kb, "split") : 0;
		long long ns = (long long)(t1 - t0);
		printf("%d %lld %ld %lld %lld %lld %lld %.1f\n", r, ns, calls, fa1 - fa0,
		       s1 - s0, pmd1 - pmd0, i1 - i0, (double)ns / calls);
		fflush(stdout);
		munmap(raw, len + PMD);
	}
	remote_stop(&rem);
	if (fd >= 0)
		close(fd);
	return 0;
}

/* ---- tlb ---- */
static int do_tlb(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "tlb <mprotect|nopte|madvise> <remote> <iters> <reps>\n");
		return 2;
	}
	const char *op = argv[2];
	int remote = atoi(argv[3]);
	long iters = atol(argv[4]);
	int reps = atoi(argv[5]);
	int mode = !strcmp(op, "mprotect") ? 0 : !strcmp(op, "nopte") ? 1 :
		   !strcmp(op, "madvise") ? 2 : -1;
	if (mode < 0) {
		fprintf(stderr, "bad op\n");
		return 2;
	}
	pin(0);
	// three pages: guard | target | guard, so the target is its own VMA and
	// mprotect never splits/merges VMAs.
	char *m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		die("mmap");
	if (mprotect(m, PG, PROT_NONE) || mprotect(m + 2 * PG, PG, PROT_NONE))
		die("mprotect guard");
	volatile char *p = m + PG;
	if (mode != 1)
		p[0] = 1;
	struct remote rem;
	remote_start(&rem, remote);
	printf("# mode=tlb op=%s remote=%d iters=%ld\n", op, remote, iters);
	printf("# rep ns_total ns_per_op ipis_cpu1 ipis_per_op\n");
	long ops_per_iter = mode == 2 ? 1 : 2;
	for (int r = 0; r < reps; r++) {
		long long i0 = tlb_irqs(1);
		uint64_t t0 = now_ns();
		for (long i = 0; i < iters; i++) {
			if (mode == 2) {
				p[0] = 1;
				if (madvise((void *)p, PG, MADV_DONTNEED))
					die("madvise");
			} else {
				if (mprotect((void *)p, PG, PROT_READ) ||
				    mprotect((void *)p, PG, PROT_READ | PROT_WRITE))
					die("mprotect");
			}
		}
		uint64_t t1 = now_ns();
		long long i1 = tlb_irqs(1);
		double nops = (double)iters * ops_per_iter;
		printf("%d %llu %.1f %lld %.3f\n", r, (unsigned long long)(t1 - t0),
		       (t1 - t0) / nops, i1 - i0, (i1 - i0) / nops);
		fflush(stdout);
	}
	remote_stop(&rem);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s split|tlb ...\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "split"))
		return do_split(argc, argv);
	if (!strcmp(argv[1], "tlb"))
		return do_tlb(argc, argv);
	fprintf(stderr, "unknown mode %s\n", argv[1]);
	return 2;
}
