/*
 * The walk across layouts and shards (core/walk.h: the admin listing's
 * pages, bulk reset, the census) on a real Redis Cluster of 2 primaries
 * (tests/harness_cluster.h), while the slot of the shard being walked moves
 * to the other node: a position is a shard and that shard's ZSCAN cursor,
 * and a ZSCAN cursor means something only on the node that gave it (a
 * hash table's order depends on the process's hash seed).  The walk must
 * stay complete: every member of the registry comes at least once.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/layout.h"
#include "core/rconn.h"
#include "core/shard.h"
#include "core/strbuf.h"
#include "core/walk.h"
#include "tests/harness.h"
#include "tests/harness_cluster.h"

#define MEMBERS 2000

static struct test_cluster C;

static void cluster_start(void)
{
	if (test_cluster_start(&C, 2, 0))
		ck_abort_msg("the cluster did not start");
}

static void cluster_stop(void)
{
	test_cluster_stop(&C);
}

/* A new rconn on the cluster through node[i]'s URL (the caller frees it). */
static struct rconn *conn_via(int i)
{
	return test_cluster_rconn(&C, i, 2000);
}

/* MEMBERS members "m<i>" (score i) in shard k's due index of layout l. */
static void fill_registry(const struct layout *l, unsigned k, char *key, size_t cap)
{
	struct strbuf b = { 0 };

	ck_assert_int_eq(layout_shard_registry(l, k, &b), 0);
	snprintf(key, cap, "%s", b.p);
	strbuf_free(&b);
	for (int i = 0; i < MEMBERS; i += 100) {
		char words[200][16];
		const char *argv[202] = { "ZADD", key };
		redisReply *r;

		for (int j = 0; j < 100; j++) {
			snprintf(words[2 * j], sizeof(words[0]), "%d", i + j);
			snprintf(words[2 * j + 1], sizeof(words[0]), "m%d", i + j);
			argv[2 + 2 * j] = words[2 * j];
			argv[3 + 2 * j] = words[2 * j + 1];
		}
		r = test_cluster_cmd_argv(&C, key, strlen(key), 202, argv, NULL);
		ck_assert_msg(r->type == REDIS_REPLY_INTEGER && r->integer == 100, "ZADD: %s",
			      r->type == REDIS_REPLY_ERROR ? r->str : "not 100");
		freeReplyObject(r);
	}
}

/*
 * Walk layout `li` of `l` from shard k's start to its end, `count` a page,
 * moving shard k's slot to the other node after `move_after` pages (0:
 * never); seen[i] counts member m<i>.  Returns the pages read.
 */
static int walk_shard(struct rconn *c, const struct layout *l, size_t nl, size_t li, unsigned k, int move_after,
		      int *seen)
{
	struct walk_pages pages = { 0 };
	struct walk_pos pos;
	int npages = 0, moved = 0;

	walk_start(&pos);
	pos.layout = li;
	pos.shard = k;
	for (;;) {
		int rc = walk_read(c, l, nl, &pos, NULL, 50, 1, &pages);

		ck_assert_msg(rc == 0, "walk_read: %d %s", rc, rconn_strerror(c, rc));
		ck_assert_uint_eq(pages.n, 1);
		ck_assert_uint_eq(pages.page[0].shard, k);
		for (size_t i = 0; i < walk_page_len(&l[li], &pages.page[0]); i++) {
			const char *p;
			size_t len;
			double due;

			ck_assert_int_eq(walk_member(&l[li], &pages.page[0], i, &p, &len, &due), 0);
			ck_assert(len > 1 && p[0] == 'm');
			seen[atoi(p + 1)]++;
		}
		walk_after(l, nl, &pages.page[0], &pos);
		npages++;
		if (!walk_at_end(pos.cursor) && !pos.done) {
			/* the position names the process that gave its cursor, and reads back the same */
			char text[WALK_POS_MAX], want[WALK_POS_MAX];
			struct walk_pos back;

			ck_assert_uint_ne(pos.node, 0);
			ck_assert_uint_eq(pos.node, pages.page[0].node);
			walk_pos_format(&pos, text);
			snprintf(want, sizeof(want), "%zu-%u-%s-%x", li, k, pos.cursor, (unsigned)pos.node);
			ck_assert_str_eq(text, want);
			ck_assert_int_eq(walk_pos_parse(text, l, nl, &back), 0);
			ck_assert_uint_eq(back.node, pos.node);
			ck_assert_str_eq(back.cursor, pos.cursor);
		}
		if (pos.shard != k || pos.layout != li || pos.done)
			break;
		if (npages == move_after && !moved) {
			int slot = (int)shard_slot(k), src = test_cluster_node_for_slot(&C, slot);

			ck_assert_int_eq(test_cluster_move_slot(&C, slot, 1 - src), 1);
			moved = 1;
		}
	}
	walk_pages_free(&pages);
	return npages;
}

START_TEST(test_walk_across_a_slot_move)
{
	struct rconn *c = conn_via(0);
	struct layout *l;
	size_t nl, li;
	const unsigned k = 300;
	char key[128];
	int *seen = calloc(MEMBERS, sizeof(*seen)), missing = 0, repeated = 0, pages;

	ck_assert_int_eq(layouts_default("sluice:", &l, &nl), 0);
	li = (size_t)(layouts_find(l, nl, ALG_LEAKY_BUCKET) - l);
	fill_registry(&l[li], k, key, sizeof(key));

	/* without a move: every member once */
	pages = walk_shard(c, l, nl, li, k, 0, seen);
	ck_assert_int_gt(pages, 10);
	for (int i = 0; i < MEMBERS; i++) {
		ck_assert_msg(seen[i] == 1, "m%d seen %d times", i, seen[i]);
		seen[i] = 0;
	}
	/* the slot moves after 5 pages of the walk: every member still comes, some perhaps twice */
	walk_shard(c, l, nl, li, k, 5, seen);
	for (int i = 0; i < MEMBERS; i++) {
		missing += seen[i] == 0;
		repeated += seen[i] > 1;
	}
	ck_assert_msg(missing == 0, "%d of %d members never came (%d twice)", missing, MEMBERS, repeated);
	/* the 5 pages read before the move came again (the shard's due index read from its start there) */
	ck_assert_int_gt(repeated, 0);
	freeReplyObject(test_cluster_cmd(&C, key, "DEL %s", key));
	free(seen);
	layouts_free(l, nl);
	rconn_free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("walk_cluster");
	TCase *tc = tcase_create("walk");

	tcase_add_unchecked_fixture(tc, cluster_start, cluster_stop);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_walk_across_a_slot_move);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
