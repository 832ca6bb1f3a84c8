/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_args: the text a user gives droce before any device exists (no
 * EAL, no port): a device's arguments (droce_parse_devargs, which is
 * what droce_dev_create, DROCE_DEVICES and droce_create_ring_pair read
 * first) and the EAL's argument vector (droce_eal_argv, from its
 * defaults, DROCE_EAL_ARGS and DROCE_EAL_EXTRA_ARGS). DPDK 22.11's
 * kvargs handed a key without '=' to droce's handlers as NULL, which
 * crashed any program (doc/security.md, finding 11): this looks for more
 * of that kind.
 *
 * Input: a control byte, then
 * - devargs (ctl bit 0 clear): the rest is the string, NUL-terminated in
 *   an exact-size buffer. Accepted arguments must be in range (path MTU
 *   one of IBTA's five, VLAN 1..4094 with a priority only with one, an
 *   lcore droce can name, both names terminated, the impairer's kvargs
 *   translated...), and a second parse gives the same bytes.
 * - EAL vector (bit 0 set): two bytes, argv's size (1..64) and the buffer
 *   for added words (in units of 8 bytes; 0: no buffer), then NUL-separated
 *   pieces: the defaults (bit 1: passed as the argument, else through
 *   DROCE_EAL_ARGS), DROCE_EAL_EXTRA_ARGS (bit 2: set, else empty), then
 *   the caller's own words. The result must equal a plain reference:
 *   which words are added, where they are copied, when there is no room
 *   (-ENOSPC), --in-memory turned into --no-shconf with --no-huge.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_log.h>

#include "droce.h"
#include "droce_int.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...) do {							\
		fprintf(stderr, "fuzz_args: " __VA_ARGS__);		\
		fprintf(stderr, "\n");					\
		abort();						\
	} while (0)

#define MAX_ARGV	64
#define MAX_PIECES	(MAX_ARGV + 2)

static const char ws[] = " \t\n";

static void check_devargs(const char *s)
{
	struct droce_devargs a, b;
	int ret = droce_parse_devargs(s, &a);
	uint32_t vid, prio;

	if (ret != 0 && ret != -EINVAL && ret != -ENOMEM)
		FAIL("devargs \"%s\": %d", s, ret);
	if (ret != 0)
		return;
	if (a.max_mtu != 256 && a.max_mtu != 512 && a.max_mtu != 1024 &&
	    a.max_mtu != 2048 && a.max_mtu != 4096)
		FAIL("\"%s\": path MTU %u", s, a.max_mtu);
	if (a.port_mtu != 0 && (a.port_mtu < 576 || a.port_mtu > 65535))
		FAIL("\"%s\": port MTU %u", s, a.port_mtu);
	if (a.lcore < -1 || a.lcore >= RTE_MAX_LCORE)
		FAIL("\"%s\": lcore %d", s, a.lcore);
	if (memchr(a.name, '\0', sizeof(a.name)) == NULL ||
	    memchr(a.impair, '\0', sizeof(a.impair)) == NULL)
		FAIL("\"%s\": a name or the impairer's kvargs unterminated", s);
	/* (the impairer reads '=' and ',' where devargs could not carry them) */
	if (strpbrk(a.impair, ":/") != NULL)
		FAIL("\"%s\": impair \"%s\" not translated", s, a.impair);
	vid = a.vlan_tci & 0xfff;
	prio = a.vlan_tci >> 13;
	if (vid == 4095 || (prio && !vid) || (a.vlan_tci & 0x1000))
		FAIL("\"%s\": VLAN TCI 0x%04x", s, a.vlan_tci);
	if (a.nb_mbuf < 1024 || a.cycles > 1 || a.icrc_batch > 1 ||
	    a.rx_spin > DROCE_MAX_RX_SPIN || a.linger_ms > DROCE_MAX_LINGER_MS)
		FAIL("\"%s\": nb_mbuf %u cycles %u icrc_batch %u rx_spin %u linger_ms %u",
		     s, a.nb_mbuf, a.cycles, a.icrc_batch, a.rx_spin, a.linger_ms);
	memset(&b, 0x5a, sizeof(b));
	if (droce_parse_devargs(s, &b) != 0 || memcmp(&a, &b, sizeof(a)) != 0)
		FAIL("\"%s\": a second parse differs", s);
}

/* The reference: the words of s, their count and the bytes they take. */
static void count_words(const char *s, int *words, size_t *bytes)
{
	while (*s) {
		size_t n;

		s += strspn(s, ws);
		n = strcspn(s, ws);
		if (n == 0)
			break;
		(*words)++;
		*bytes += n + 1;
		s += n;
	}
}

/* The next word of *s into w (NUL-terminated), or false. */
static bool next_word(const char **s, char *w, size_t cap)
{
	size_t n;

	*s += strspn(*s, ws);
	n = strcspn(*s, ws);
	if (n == 0 || n >= cap)
		return false;
	memcpy(w, *s, n);
	w[n] = '\0';
	*s += n;
	return true;
}

/*
 * The two variables, put in the environment once (LLVMFuzzerInitialize)
 * and rewritten in place: setenv() would leak its old string at every
 * input (glibc keeps them), gigabytes in a ten-minute run.
 */
#define ENV_ROOM	8192
static char env_args[ENV_ROOM] = "DROCE_EAL_ARGS=";
static char env_extra[ENV_ROOM] = "DROCE_EAL_EXTRA_ARGS=";

static bool env_put(char *var, const char *value)
{
	char *eq = strchr(var, '=') + 1;
	size_t n = strlen(value);

	if ((size_t)(eq - var) + n + 1 > ENV_ROOM)
		return false;
	memcpy(eq, value, n + 1);
	return true;
}

static void check_eal(uint8_t ctl, const uint8_t *d, size_t n)
{
	char *argv[MAX_ARGV + 1], *orig[MAX_ARGV + 1];
	const char *piece[MAX_PIECES];
	char *text, *buf = NULL, word[4096];
	const char *defaults, *extra, *src;
	int max, argc, ret, words = 0, np = 0, k;
	size_t len, bytes = 0;
	bool no_huge = false;

	if (n < 2)
		return;
	max = 1 + d[0] % MAX_ARGV;
	len = (size_t)d[1] * 8;
	/* NUL-separated pieces, in a copy with room for a last NUL */
	text = malloc(n - 2 + 1);
	if (text == NULL)
		return;
	memcpy(text, d + 2, n - 2);
	text[n - 2] = '\0';
	for (size_t i = 0; np < MAX_PIECES && i <= n - 2; ) {
		piece[np++] = text + i;
		i += strlen(text + i) + 1;
	}
	defaults = np > 0 ? piece[0] : "";
	extra = np > 1 ? piece[1] : NULL;
	argv[0] = (char *)(uintptr_t)"fuzz_args";
	argc = 1;
	for (int i = 2; i < np && argc < MAX_ARGV; i++)
		argv[argc++] = (char *)(uintptr_t)piece[i];
	memcpy(orig, argv, sizeof(*argv) * (size_t)argc);
	if (len)
		buf = malloc(len);	/* exact size: ASan sees an overrun */
	/* (an empty variable reads as an unset one there) */
	if (!env_put(env_args, ctl & 2 ? "" : defaults) ||
	    !env_put(env_extra, ctl & 4 && extra != NULL ? extra : ""))
		goto out;
	ret = droce_eal_argv(argv, argc, max, ctl & 2 ? defaults : NULL, buf, len);

	/* the reference */
	src = NULL;
	if (argc == 1) {
		src = defaults;
		if (*src == '\0')
			src = sysconf(_SC_NPROCESSORS_ONLN) > 1 ?
			      "-l 0-1 --in-memory --no-pci --log-level=*:warning" :
			      "-l 0 --in-memory --no-pci --log-level=*:warning";
		count_words(src, &words, &bytes);
	}
	if (ctl & 4 && extra != NULL && *extra != '\0')
		count_words(extra, &words, &bytes);
	else
		extra = NULL;
	if (buf == NULL || max <= argc) {
		if (ret != -EINVAL)
			FAIL("max %d argc %d buf %p: %d, not -EINVAL", max, argc,
			     (void *)buf, ret);
		goto out;
	}
	if (argc + words > max - 1 || bytes > len) {
		if (ret != -ENOSPC)
			FAIL("%d words (%zu bytes) after %d, max %d, %zu bytes: %d, not -ENOSPC",
			     words, bytes, argc, max, len, ret);
		goto out;
	}
	if (ret != argc + words)
		FAIL("%d words after %d: %d", words, argc, ret);
	if (argv[ret] != NULL)
		FAIL("argv[%d] not NULL", ret);
	for (int i = 1; i < ret; i++)
		no_huge |= strcmp(argv[i], "--no-huge") == 0;
	/* the caller's words stay, but for --in-memory under --no-huge */
	for (int i = 0; i < argc; i++) {
		bool swapped = i > 0 && no_huge &&
			       strcmp(orig[i], "--in-memory") == 0;

		if (swapped ? strcmp(argv[i], "--no-shconf") != 0 :
			      argv[i] != orig[i])
			FAIL("the caller's argv[%d] \"%s\" became \"%s\"", i,
			     orig[i], argv[i]);
	}
	/* the added words: the reference's, in buf, in order */
	k = argc;
	for (int pass = 0; pass < 2; pass++) {
		const char *s = pass ? extra : src;

		while (s != NULL && next_word(&s, word, sizeof(word))) {
			bool swapped = no_huge && strcmp(word, "--in-memory") == 0;
			const char *want = swapped ? "--no-shconf" : word;

			if (!swapped && (argv[k] < buf || argv[k] >= buf + len ||
			    memchr(argv[k], '\0', (size_t)(buf + len - argv[k])) == NULL))
				FAIL("argv[%d] not a word in the buffer", k);
			if (strcmp(argv[k], want) != 0)
				FAIL("argv[%d] \"%s\", not \"%s\"", k, argv[k], want);
			k++;
		}
	}
	if (k != ret)
		FAIL("%d words checked of %d", k, ret);
out:
	free(buf);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		check_eal(data[0], data + 1, size - 1);
		return 0;
	}
	s = malloc(size);		/* the rest and its NUL, exactly */
	if (s == NULL)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	check_devargs(s);
	free(s);
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* every refusal logs its reason: not a million times a minute */
	rte_log_set_global_level(RTE_LOG_EMERG);
	if (putenv(env_args) != 0 || putenv(env_extra) != 0)
		abort();
	return 0;
}
