#include "tests/conn_fixture.h"

#include "tests/harness.h"

redisContext *c;

void conn_up(void)
{
	c = test_srv_connect_flushed();
}

void conn_down(void)
{
	redisFree(c);
	c = NULL;
}
