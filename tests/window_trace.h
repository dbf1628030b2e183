#ifndef SLUICE_TEST_WINDOW_TRACE_H
#define SLUICE_TEST_WINDOW_TRACE_H
/*
 * What the suites of the window algorithms (check_sliding_log.c,
 * check_sliding_counter.c, check_fixed_window.c) share on top of
 * tests/script_fixture.h: the skew horizon.
 *
 * Header-only and static, as script_fixture.h.
 */
#include "tests/script_fixture.h"

/* The skew horizon of lua/lib/skew.lua, in ms (DESIGN.md, "Time"). */
#ifndef SKEW_MS
#define SKEW_MS 10000LL
#endif

#endif
