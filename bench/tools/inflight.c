/*
 * inflight DEVICE SECONDS [OUT]: how busy a block device is kept, sampled every millisecond.
 *
 * Reads /sys/block/DEVICE/inflight (reads and writes the device has been handed and not yet
 * completed) once a millisecond for up to SECONDS, or until SIGINT/SIGTERM. Over the span
 * from the first to the last sample with a read in flight it prints how many milliseconds
 * that was, the mean number of reads in flight, the share of milliseconds with none (the
 * device idle while the workload runs), and the histogram of reads in flight; OUT, if
 * given, gets one sample per line. The sample buffer is allocated once: SECONDS × 1000
 * entries.
 *
 * Build: cc -O2 -o inflight inflight.c (bench/direct-paired.sh does this itself).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_BUCKET 255

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: inflight DEVICE SECONDS [OUT]\n");
    return 2;
  }
  char path[256];
  snprintf(path, sizeof path, "/sys/block/%s/inflight", argv[1]);
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    perror(path);
    return 1;
  }
  long capacity = (long)(atof(argv[2]) * 1000) + 1;
  int *samples = calloc(capacity, sizeof *samples);
  if (!samples) return 1;
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  long n = 0;
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  while (!stop && n < capacity) {
    char buf[64];
    ssize_t got = pread(fd, buf, sizeof buf - 1, 0);
    buf[got > 0 ? got : 0] = 0;
    samples[n++] = atoi(buf); /* the first field: reads */
    next.tv_nsec += 1000000;
    if (next.tv_nsec >= 1000000000) {
      next.tv_nsec -= 1000000000;
      next.tv_sec++;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
  }
  long first = 0, last = n - 1;
  while (first < n && samples[first] == 0) first++;
  while (last >= 0 && samples[last] == 0) last--;
  if (first > last) {
    printf("no reads seen\n");
    return 0;
  }
  long hist[MAX_BUCKET + 1] = {0}, sum = 0, span = last - first + 1;
  for (long i = first; i <= last; i++) {
    hist[samples[i] > MAX_BUCKET ? MAX_BUCKET : samples[i]]++;
    sum += samples[i];
  }
  printf("active %ld ms, mean in flight %.1f, idle %.1f%%, histogram (reads:%% of ms)", span,
         (double)sum / span, 100.0 * hist[0] / span);
  for (int i = 0; i <= MAX_BUCKET; i++)
    if (hist[i]) printf(" %d:%.1f", i, 100.0 * hist[i] / span);
  printf("\n");
  if (argc > 3) {
    FILE *out = fopen(argv[3], "w");
    if (!out) {
      perror(argv[3]);
      return 1;
    }
    for (long i = first; i <= last; i++) fprintf(out, "%d\n", samples[i]);
    fclose(out);
  }
  return 0;
}
