#ifndef SLUICE_CLOCK_H
#define SLUICE_CLOCK_H
/* Time inside the daemon: CLOCK_MONOTONIC for intervals, never wall time. */
#include <stdint.h>

/* Milliseconds on CLOCK_MONOTONIC (arbitrary origin, never goes backward). */
int64_t clock_mono_ms(void);
/* Microseconds on CLOCK_MONOTONIC. */
int64_t clock_mono_us(void);

#endif
