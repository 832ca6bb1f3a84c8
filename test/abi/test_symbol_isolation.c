/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce's ibv_* exports must never capture a real libibverbs' calls, nor
 * the reverse. Debian's DPDK loads libibverbs itself (its mlx5 PMDs link
 * it), so both are in this process once the EAL is up; we load it again
 * explicitly with RTLD_GLOBAL to make the test independent of that.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include "droce.h"

/* The EAL's runtime directory of meson's DROCE_EAL_ARGS (--file-prefix):
 * empty with --in-memory and --no-telemetry, and left behind by a process
 * that never calls rte_eal_cleanup(). */
#define RUNTIME_DIR "/run/dpdk/droce-abi"

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); \
	fprintf(stderr, "\n"); rmdir(RUNTIME_DIR); exit(1); } while (0)

static const char *lib_of(void *fn)
{
	Dl_info info;

	if (!dladdr(fn, &info) || info.dli_fname == NULL)
		return "?";
	return info.dli_fname;
}

int main(void)
{
	void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_GLOBAL);
	struct ibv_device **(*real_list)(int *);
	struct ibv_device **ours, **theirs;
	int n_ours = -1, n_theirs = -1;

	if (h == NULL) {
		printf("SKIPPED: libibverbs.so.1 not installed (%s)\n", dlerror());
		return 77;
	}
	real_list = (struct ibv_device **(*)(int *))dlvsym(h,
			"ibv_get_device_list", "IBVERBS_1.1");
	if (real_list == NULL)
		FAIL("libibverbs has no ibv_get_device_list@IBVERBS_1.1");
	if ((void *)real_list == (void *)&ibv_get_device_list)
		FAIL("ibv_get_device_list@IBVERBS_1.1 resolved to droce's");
	if (strstr(lib_of((void *)&ibv_get_device_list), "libdroce") == NULL)
		FAIL("our ibv_get_device_list lives in %s, not libdroce",
		     lib_of((void *)&ibv_get_device_list));
	if (strstr(lib_of((void *)real_list), "libibverbs") == NULL)
		FAIL("the real ibv_get_device_list lives in %s",
		     lib_of((void *)real_list));
	/* droce's: the embedded default pair, EAL started from the environment. */
	ours = ibv_get_device_list(&n_ours);
	if (ours == NULL || n_ours != 2)
		FAIL("droce's ibv_get_device_list gave %d devices (errno %d)",
		     n_ours, errno);
	for (int i = 0; i < n_ours; i++)
		if (strncmp(ibv_get_device_name(ours[i]), "droce", 5) != 0)
			FAIL("device %d is %s", i, ibv_get_device_name(ours[i]));
	/* The real one after the EAL has loaded its own copy: sees no droce. */
	theirs = real_list(&n_theirs);
	for (int i = 0; theirs && i < n_theirs; i++)
		for (int j = 0; j < n_ours; j++)
			if (theirs[i] == ours[j])
				FAIL("the real libibverbs listed droce's device %d", j);
	printf("droce: %d devices via %s; real libibverbs: %d devices via %s\n",
	       n_ours, lib_of((void *)&ibv_get_device_list), n_theirs,
	       lib_of((void *)real_list));
	/* Each of droce's exports that rdma-core also has must differ. */
	{
		static const char *const names[] = {
			"ibv_open_device", "ibv_alloc_pd", "ibv_reg_mr",
			"ibv_create_cq", "ibv_create_qp", "ibv_modify_qp",
			"ibv_destroy_qp", "ibv_query_gid", NULL,
		};
		for (int i = 0; names[i]; i++) {
			void *r = dlvsym(h, names[i], "IBVERBS_1.1");
			void *o = dlvsym(RTLD_DEFAULT, names[i], "DROCE_1");

			if (o == NULL)
				FAIL("%s@DROCE_1 missing", names[i]);
			if (r == o)
				FAIL("%s: both versions resolve to one function",
				     names[i]);
		}
	}
	if (theirs)
		((void (*)(struct ibv_device **))dlvsym(h, "ibv_free_device_list",
							 "IBVERBS_1.1"))(theirs);
	ibv_free_device_list(ours);
	rmdir(RUNTIME_DIR);
	printf("PASS\n");
	return 0;
}
