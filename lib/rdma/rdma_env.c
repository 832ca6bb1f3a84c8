/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Plain verbs programs never call rte_eal_init: the first
 * ibv_get_device_list() does it for them, from the environment.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include "droce_int.h"

#define ENV_MAX_ARGS 64

static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static bool env_done;
static int env_ret;
static pid_t env_pid;		/* the process that set up (env_exit) */

/* Append the words of s to argv[*argc..), copying them into buf at *used. */
static int add_words(const char *s, char **argv, int *argc, int max,
		     char *buf, size_t len, size_t *used)
{
	while (*s) {
		size_t n;

		s += strspn(s, " \t\n");
		n = strcspn(s, " \t\n");
		if (n == 0)
			break;
		if (*argc >= max - 1 || *used + n + 1 > len)
			return -ENOSPC;
		memcpy(buf + *used, s, n);
		buf[*used + n] = '\0';
		argv[(*argc)++] = buf + *used;
		*used += n + 1;
		s += n;
	}
	return 0;
}

pid_t droce_eal_argv_pid;

int droce_eal_argv(char **argv, int argc, int max, const char *defaults,
		   char *buf, size_t len)
{
	const char *ex = getenv("DROCE_EAL_EXTRA_ARGS");
	size_t used = 0;
	bool no_huge = false;

	if (argv == NULL || argc < 1 || max <= argc || buf == NULL)
		return -EINVAL;
	if (argc == 1) {
		if (defaults == NULL)
			defaults = getenv("DROCE_EAL_ARGS");
		if (defaults == NULL || *defaults == '\0')
			defaults = sysconf(_SC_NPROCESSORS_ONLN) > 1 ?
				   "-l 0-1 --in-memory --no-pci --log-level=*:warning" :
				   "-l 0 --in-memory --no-pci --log-level=*:warning";
		if (add_words(defaults, argv, &argc, max, buf, len, &used))
			return -ENOSPC;
	}
	/* The set-up scripts say here whether hugepages are missing. */
	if (ex != NULL && add_words(ex, argv, &argc, max, buf, len, &used))
		return -ENOSPC;
	argv[argc] = NULL;
	/* DPDK 22.11 refuses --in-memory with --no-huge (legacy memory);
	 * --no-shconf keeps the same promise of leaving nothing behind. */
	for (int i = 1; i < argc; i++)
		no_huge |= strcmp(argv[i], "--no-huge") == 0;
	for (int i = 1; no_huge && i < argc; i++)
		if (strcmp(argv[i], "--in-memory") == 0)
			argv[i] = (char *)(uintptr_t)"--no-shconf";
	droce_eal_argv_pid = getpid();
	return argc;
}

static int eal_from_env(void)
{
	static char buf[4608];
	static char *argv[ENV_MAX_ARGS];
	int argc, ret;

	argv[0] = (char *)(uintptr_t)"droce";
	argc = droce_eal_argv(argv, 1, ENV_MAX_ARGS, NULL, buf, sizeof(buf));
	if (argc < 0) {
		DROCE_LOG(ERR, "DROCE_EAL_ARGS/DROCE_EAL_EXTRA_ARGS: too many words");
		return argc;
	}
	ret = rte_eal_init(argc, argv);
	if (ret < 0 && rte_errno != EALREADY) {
		const char *env = getenv("DROCE_EAL_ARGS");

		DROCE_LOG(ERR, "EAL init from DROCE_EAL_ARGS=\"%s\" failed: %s",
			  env ? env : "", rte_strerror(rte_errno));
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

/* The engines stopped and the kernel ports closed; `why` for the log. */
static void env_release(const char *why)
{
	DROCE_LOG(INFO, "%s: engines stopped, %u kernel port(s) closed", why,
		  droce_exit_release());
}

/*
 * A program that let droce set up from the environment (a verbs program
 * that never heard of DPDK) does not tear down, and need not: its memory,
 * files and sockets go with the process. What does not is kernel state
 * that a port over a kernel interface set: net_af_xdp's XDP program stays
 * attached, the interface promiscuous. So at exit the engines stop (other
 * threads may still be in verbs calls) and those ports close; nothing
 * else. A full teardown there (droce_cleanup, rte_eal_cleanup) raced the
 * PMDs' own threads: DPDK 22.11's memif crashed one process in ~15 when
 * its peer's disconnect reached the interrupt thread during the close.
 * An atexit handler, registered by the first ibv_get_device_list(): it
 * runs before the program's own handlers registered earlier (their verbs
 * calls find the engines halted, a droce_cleanup() still works) and before
 * any library's destructor, while every PMD is still whole.
 */
static void env_exit(void)
{
	/* (a forked child inherits the handler, not the engines or ports) */
	if (getpid() != env_pid || droce_nb_devs == 0)
		return;
	env_release("exit");
}

/*
 * The signals that end a program by default (Ctrl-C, kill, a closed
 * terminal) skip atexit handlers. Where droce has a kernel port and the
 * program left such a signal's disposition at its default, droce catches
 * it: the handler only wakes a thread of droce's (write() is
 * async-signal-safe; the release takes locks and calls into the PMD),
 * which releases as at exit, then puts the default back and raises the
 * signal again, so that the process still ends by it. The program runs
 * on meanwhile (SA_RESTART).
 */
static const int env_signals[] = { SIGINT, SIGTERM, SIGHUP };
static int sig_fd = -1;			/* eventfd: handler -> sig_watch */
static volatile sig_atomic_t sig_caught;

static void sig_handler(int sig)
{
	int saved = errno;
	uint64_t one = 1;

	if (getpid() != env_pid) {	/* a forked child's: not its ports */
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	if (sig_caught == 0)
		sig_caught = sig;
	if (write(sig_fd, &one, sizeof(one)) < 0) {
		/* (no thread to wake: end as the default would) */
		signal(sig, SIG_DFL);
		raise(sig);
	}
	errno = saved;
}

static void *sig_watch(void *arg)
{
	char why[24];
	sigset_t one;
	uint64_t v;
	int sig;

	(void)arg;
	while (read(sig_fd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
	sig = sig_caught;
	snprintf(why, sizeof(why), "SIG%s", sigabbrev_np(sig));
	env_release(why);
	signal(sig, SIG_DFL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	raise(sig);
	return NULL;
}

static void env_catch_signals(void)
{
	struct sigaction sa, old;
	sigset_t all, prev;
	pthread_t th;
	bool any = false;

	for (uint32_t i = 0; i < droce_nb_devs; i++)
		any |= droce_devs[i] != NULL && droce_devs[i]->port_kernel;
	if (!any)
		return;
	sig_fd = eventfd(0, EFD_CLOEXEC);
	if (sig_fd < 0)
		return;
	/* The thread blocks every signal, so that none lands on it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &prev);
	if (pthread_create(&th, NULL, sig_watch, NULL) != 0) {
		pthread_sigmask(SIG_SETMASK, &prev, NULL);
		close(sig_fd);
		sig_fd = -1;
		return;
	}
	pthread_sigmask(SIG_SETMASK, &prev, NULL);
	pthread_detach(th);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sig_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < RTE_DIM(env_signals); i++)
		if (sigaction(env_signals[i], NULL, &old) == 0 &&
		    !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL)
			(void)sigaction(env_signals[i], &sa, NULL);
}

int droce_env_init(void)
{
	pthread_mutex_lock(&env_lock);
	if (env_done || droce_nb_devs > 0) {
		pthread_mutex_unlock(&env_lock);
		return env_done ? env_ret : 0;
	}
	env_done = true;
	env_pid = getpid();
	if (atexit(env_exit) != 0)
		DROCE_LOG(WARNING, "no exit handler: ports over kernel interfaces stay open at exit");
	/* An EAL the application started itself already has lcores. */
	if (rte_lcore_count() == 0)
		env_ret = eal_from_env();
	if (env_ret == 0)
		env_ret = devices_from_env();
	if (env_ret == 0)
		env_catch_signals();
	pthread_mutex_unlock(&env_lock);
	return env_ret;
}
