#ifndef SLUICE_ADMIN_SAMPLER_H
#define SLUICE_ADMIN_SAMPLER_H
/*
 * The Redis side of GET /metrics, sampled on a thread of its own with its
 * own connection, so that a scrape never waits on Redis longer than
 * SAMPLER_WAIT_MS: whether Redis answered a PING, and the paths registered
 * per layout (1024 ZCARDs, one per shard's due index, for each of sluice's
 * own layouts; one SCARD for a foreign registry set; none for a layout
 * found by SCAN).  A sample is taken when a scrape asks and the last one is
 * older than SAMPLER_FRESH_MS (so an idle daemon reads nothing, and rapid
 * scrapes cost Redis one sample a second); the scrape waits for it up to
 * SAMPLER_WAIT_MS, then takes the last one (its age is exported).  The first
 * sample is taken when the sampler starts; a scrape before it ended, with
 * nothing to fall back on, waits for it up to the Redis timeout.
 * Thread-safe.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/layout.h"
#include "core/redis_target.h"

#define SAMPLER_FRESH_MS 1000
#define SAMPLER_WAIT_MS 15

struct sampler;

/*
 * A sampler of `layouts` (borrowed; they outlive it) over its own connection
 * to `redis` (copied), with its thread started.  NULL on ENOMEM or when the
 * thread cannot start.
 */
struct sampler *sampler_new(const struct redis_target *redis, int64_t timeout_ms, const struct layout *layouts,
			    size_t nlayouts);
/* From any thread: the sample's Redis call in flight fails now, later ones at once (rconn_abort). */
void sampler_abort(struct sampler *s);
/* Stop the thread (after the sample it takes, if any) and free.  NULL is a no-op. */
void sampler_free(struct sampler *s);
/*
 * The newest sample: the last one when it is younger than `fresh_ms` (0:
 * never), else a new one when the thread brings it within `wait_ms`:
 * *up (1: Redis answered its PING), paths[i] and have[i] for each layout i
 * (have[i] 0: not counted: Redis down, a registry of another type, or a
 * SCAN layout), *age_ms (-1: no sample yet).  `paths` and `have` hold
 * nlayouts entries (the caller's).
 */
void sampler_get(struct sampler *s, int64_t fresh_ms, int64_t wait_ms, int *up, long long *paths, int *have,
		 int64_t *age_ms);

#endif
