#ifndef SLUICE_CLOCK_H
#define SLUICE_CLOCK_H
/* Time inside the daemon: CLOCK_MONOTONIC for intervals, never wall time. */
#include <stdint.h>
#include <time.h>

/* Milliseconds on CLOCK_MONOTONIC (arbitrary origin, never goes backward). */
int64_t clock_mono_ms(void);
/* Microseconds on CLOCK_MONOTONIC. */
int64_t clock_mono_us(void);
/* Unix time in ms (CLOCK_REALTIME): for display only, never for intervals. */
int64_t clock_wall_ms(void);
/*
 * The time `ms` milliseconds from now on clock `clk` (CLOCK_REALTIME for a
 * default pthread_cond_timedwait, CLOCK_MONOTONIC for one whose condition
 * variable was set to it).
 */
struct timespec clock_deadline(clockid_t clk, int64_t ms);

#endif
