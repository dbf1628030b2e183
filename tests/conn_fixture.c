#include "tests/conn_fixture.h"

#include "tests/harness.h"
#include "tests/harness_mode.h"

redisContext *c;

void conn_up(void)
{
	c = test_srv_connect_flushed();
}

void conn_down(void)
{
	test_srv_disconnect(c);
	c = NULL;
}
