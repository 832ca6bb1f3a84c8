/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Plain verbs programs never call rte_eal_init: the first
 * ibv_get_device_list() does it for them, from the environment.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include "droce_int.h"

#define ENV_MAX_ARGS 64

static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static bool env_done;
static int env_ret;

/* Split s (modified) at whitespace into argv after argv[0..*argc). */
static void split_args(char *s, char **argv, int *argc)
{
	char *save = NULL;

	for (char *t = strtok_r(s, " \t\n", &save); t && *argc < ENV_MAX_ARGS - 1;
	     t = strtok_r(NULL, " \t\n", &save))
		argv[(*argc)++] = t;
}

static int eal_from_env(void)
{
	static char buf[4096], extra[512];
	static char *argv[ENV_MAX_ARGS];
	const char *env = getenv("DROCE_EAL_ARGS");
	const char *ex = getenv("DROCE_EAL_EXTRA_ARGS");
	int argc = 0, ret;

	argv[argc++] = (char *)"droce";
	if (env == NULL || *env == '\0')
		env = sysconf(_SC_NPROCESSORS_ONLN) > 1 ?
		      "-l 0-1 --in-memory --no-pci --log-level=*:warning" :
		      "-l 0 --in-memory --no-pci --log-level=*:warning";
	snprintf(buf, sizeof(buf), "%s", env);
	split_args(buf, argv, &argc);
	/* The set-up scripts say here whether hugepages are missing. */
	if (ex && *ex) {
		snprintf(extra, sizeof(extra), "%s", ex);
		split_args(extra, argv, &argc);
	}
	argv[argc] = NULL;
	/* DPDK 22.11 refuses --in-memory with --no-huge; --no-shconf keeps
	 * the same promise of leaving nothing behind. */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--no-huge") == 0)
			for (int j = 1; j < argc; j++)
				if (strcmp(argv[j], "--in-memory") == 0)
					argv[j] = (char *)"--no-shconf";
	ret = rte_eal_init(argc, argv);
	if (ret < 0 && rte_errno != EALREADY) {
		DROCE_LOG(ERR, "EAL init from DROCE_EAL_ARGS=\"%s\" failed: %s",
			  env, rte_strerror(rte_errno));
		return -rte_errno;
	}
	return 0;
}

static int devices_from_env(void)
{
	const char *env = getenv("DROCE_DEVICES");
	char *buf, *save = NULL;
	int ret = 0;

	if (env == NULL || *env == '\0')
		return droce_create_ring_pair(NULL, NULL);
	buf = strdup(env);
	if (buf == NULL)
		return -ENOMEM;
	for (char *d = strtok_r(buf, ";", &save); d; d = strtok_r(NULL, ";", &save)) {
		char port[128] = "";
		const char *p = strstr(d, "port=");
		size_t n;

		if (p == NULL) {
			DROCE_LOG(ERR, "DROCE_DEVICES entry \"%s\" has no port=", d);
			ret = -EINVAL;
			break;
		}
		p += 5;
		n = strcspn(p, ",");
		if (n == 0 || n >= sizeof(port)) {
			ret = -EINVAL;
			break;
		}
		memcpy(port, p, n);
		ret = droce_dev_create_by_name(port, d);
		if (ret < 0) {
			DROCE_LOG(ERR, "DROCE_DEVICES entry \"%s\": %s", d,
				  strerror(-ret));
			break;
		}
		ret = 0;
	}
	free(buf);
	return ret;
}

int droce_env_init(void)
{
	pthread_mutex_lock(&env_lock);
	if (env_done || droce_nb_devs > 0) {
		pthread_mutex_unlock(&env_lock);
		return env_done ? env_ret : 0;
	}
	env_done = true;
	/* An EAL the application started itself already has lcores. */
	if (rte_lcore_count() == 0)
		env_ret = eal_from_env();
	if (env_ret == 0)
		env_ret = devices_from_env();
	pthread_mutex_unlock(&env_lock);
	return env_ret;
}
