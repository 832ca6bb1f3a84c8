/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device arguments: every key taken with a good value (the two devices of
 * the pair are made with all of them, and what a program can see of them
 * is checked: name, path MTU, the GIDs from ip= and mac=); every key
 * refused without a value (DPDK 22.11's kvargs hands a key given without
 * '=' to its handler with a NULL value: droce crashed on it) and with bad
 * values; and a refused pair makes nothing: no device, no ethdev port, no
 * half a pair, however many times it is asked. The same for arguments that
 * parse but that a device cannot be made with (an lcore that is no worker,
 * an impairer's bad arguments), where the first device of the pair was
 * made before the second failed and has to go again.
 */
#include <stdio.h>
#include <string.h>

#include <rte_ethdev.h>

#include "droce.h"
#include "droce_test.h"

#define GOOD_A "ip=198.18.2.1,mtu=4096,name=dargs_a,lcore=app,idle_us=10," \
	       "nb_mbuf=2048,arp_timeout_ms=50,post_drive=8,rx_spin=4," \
	       "icrc_batch=0,linger_ms=0,cycles=1,port_mtu=4200"
#define GOOD_B "ip=198.18.2.2,mac=02:00:c6:12:02:02,name=dargs_b,vlan=7," \
	       "prio=3,zc_min=65536,impair=seed:7"

static const char *const keys[] = {
	"ip", "mtu", "lcore", "name", "idle_us", "mac", "nb_mbuf",
	"arp_timeout_ms", "port", "impair", "vlan", "prio", "port_mtu",
	"zc_min", "cycles", "post_drive", "rx_spin", "icrc_batch", "linger_ms",
};

static const char *const bad[] = {
	"", "mtu=1024", "ip=198.18.2.9,ip=198.18.2.10", "ip=300.1.1.1",
	"ip=198.18.2.9,foo=1", "ip=198.18.2.9,mtu=300",
	"ip=198.18.2.9,mtu=8192", "ip=198.18.2.9,mtu=x",
	"ip=198.18.2.9,mtu=99999999999999999999", "ip=198.18.2.9,mtu=-1024",
	"ip=198.18.2.9,mtu=", "ip=198.18.2.9,lcore=-1",
	"ip=198.18.2.9,lcore=99999", "ip=198.18.2.9,lcore=ap",
	"ip=198.18.2.9,name=",
	/* (64 characters: one more than a device name holds) */
	"ip=198.18.2.9,name=a_device_name_of_sixty_four_characters_one_more_than_it_has_room",
	"ip=198.18.2.9,mac=zz", "ip=198.18.2.9,mac=02:00:c6:12:02",
	"ip=198.18.2.9,nb_mbuf=10", "ip=198.18.2.9,vlan=4095",
	"ip=198.18.2.9,prio=8,vlan=1", "ip=198.18.2.9,prio=3",
	"ip=198.18.2.9,port_mtu=100", "ip=198.18.2.9,port_mtu=70000",
	"ip=198.18.2.9,cycles=2", "ip=198.18.2.9,rx_spin=4294967295",
	"ip=198.18.2.9,icrc_batch=2", "ip=198.18.2.9,linger_ms=1001",
	"ip=198.18.2.9,idle_us=1x",
};

/* Refused, and nothing made. */
static void refused(const char *a, const char *b, int devs, int ports)
{
	int ret = droce_create_ring_pair(a, b);

	if (ret >= 0 || droce_dev_count() != devs || dt_nb_ports() != ports)
		printf("  (%s | %s): %d, %d devices, %d ports\n", a ? a : "NULL",
		       b ? b : "NULL", ret, droce_dev_count(), dt_nb_ports());
	CHECK(ret < 0);
	CHECK_EQ(droce_dev_count(), devs);
	CHECK_EQ(dt_nb_ports(), ports);
}

int main(void)
{
	static const uint8_t gid0_b[16] = {
		0xfe, 0x80, 0, 0, 0, 0, 0, 0,
		0x00, 0x00, 0xc6, 0xff, 0xfe, 0x12, 0x02, 0x02 };
	static const uint8_t gid1_a[16] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 2, 1 };
	struct dt_env env;
	char s[256];
	int devs, ports, n = 0;

	dt_watchdog(60);
	/* Every key with a good value (port= is DROCE_DEVICES', below). */
	dt_init(&env, "test_devargs", GOOD_A, GOOD_B);
	CHECK(strcmp(ibv_get_device_name(env.dev[0].dev), "dargs_a") == 0);
	CHECK(strcmp(ibv_get_device_name(env.dev[1].dev), "dargs_b") == 0);
	CHECK_EQ(env.dev[0].port.max_mtu, IBV_MTU_4096);
	CHECK_EQ(env.dev[1].port.max_mtu, IBV_MTU_1024);
	CHECK(memcmp(env.dev[1].gid[0].raw, gid0_b, 16) == 0);
	CHECK(memcmp(env.dev[0].gid[1].raw, gid1_a, 16) == 0);
	devs = droce_dev_count();
	ports = dt_nb_ports();
	CHECK_EQ(devs, 2);

	/* Each key without a value (alone, after ip=, and before it). */
	for (size_t i = 0; i < RTE_DIM(keys); i++) {
		snprintf(s, sizeof(s), "ip=198.18.2.9,%s", keys[i]);
		refused(s, NULL, devs, ports);
		snprintf(s, sizeof(s), "%s,ip=198.18.2.9", keys[i]);
		refused(s, NULL, devs, ports);
		refused(keys[i], NULL, devs, ports);
		n += 3;
	}
	/* Bad values, for either device of the pair: no half a pair. */
	for (size_t i = 0; i < RTE_DIM(bad); i++) {
		refused(bad[i], NULL, devs, ports);
		refused(NULL, bad[i], devs, ports);
		n += 2;
	}
	/* Arguments that parse, devices that cannot be made: either side,
	 * more times than DROCE_MAX_DEVS has room for half pairs. */
	for (int i = 0; i < 12; i++) {
		const char *no = i % 2 ? "ip=198.18.2.9,lcore=100" :
			"ip=198.18.2.9,impair=no_such_key:1";

		refused(no, "ip=198.18.2.10", devs, ports);
		refused("ip=198.18.2.10", no, devs, ports);
		n += 2;
	}
	printf("%d refused pairs, nothing made: %d devices, %d ports\n", n,
	       droce_dev_count(), dt_nb_ports());

	/* Still room for a good pair after all of them (a refused pair
	 * used to take its two rings out of DROCE_MAX_DEVS for good). */
	CHECK_OK(droce_create_ring_pair("ip=198.18.2.3,name="
		 "a_device_name_of_sixty_three_characters_as_much_as_it_has_room_",
		 "ip=198.18.2.4"));
	CHECK_EQ(droce_dev_count(), devs + 2);
	return dt_finish(&env);
}
