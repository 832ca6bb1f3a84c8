/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * perftest's out-of-band exchange over TCP (perftest 4.5, "ethernet"
 * exchange, not rdma_cm), written from its description:
 *
 *  - the server listens on an IPv4 socket (default port 18515) and takes
 *    one client; the client connects to the host named on its command line
 *  - every exchange is symmetric: the client writes its bytes then reads
 *    the server's; the server reads then writes
 *  - in order: the version strings (16 bytes, "6.06" NUL-padded), the
 *    system data (page size, cache line: 4 bytes each, network order,
 *    when the peer is 5.32 or newer), the MTU as a decimal string of the
 *    ibv_mtu enum (2 bytes from 5.31 on), then "hand shakes" of the QP
 *    address: 108 bytes with a GID,
 *      "LLLL:OOOO:QQQQQQ:PPPPPP:RRRRRRRR:VVVVVVVVVVVVVVVV:g0:g1:...:g15:SSSSSSSS:"
 *    (LID, outstanding reads, QPN, PSN, rkey, vaddr, GID bytes, SRQN, hex)
 *  - the bandwidth report: size (8 bytes), iterations (8 bytes from 5.33,
 *    else 4), peak, average and message rate (IEEE doubles), each 64-bit
 *    value big-endian, each field a separate exchange
 *  - closing: one more hand shake, then each side writes "done" with its
 *    NUL and closes.
 *
 * How many hand shakes happen where depends on the test; main.c follows
 * perftest's order for each.
 *
 * A reader blocked here must keep an app-driven (lcore=app) droce engine
 * turning, or the peer's traffic would go unanswered until droce's keeper
 * thread runs: oob_set_drive() names the end whose engine to drive.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <byteswap.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "perf.h"

#define KEY_MSG_SIZE_GID 108

static int sock = -1;
static struct perf_side *drive_side;
double oob_rem_version;

void oob_set_drive(struct perf_side *s)
{
	drive_side = s;
}

/* How long a reader drives the engine between two looks at the socket:
 * short beside a TCP exchange, long beside an engine iteration. */
#define OOB_DRIVE_US 50

/*
 * A message's bytes come in one write: once some have come, the rest not
 * following within this long means the two ends read each other's
 * messages out of step (given different options: one waits for the rest
 * of a message the other never sends, while it waits for an answer), and
 * would wait for each other for good. Before the first byte a wait is a
 * peer at work (a passive server waits out the whole run).
 */
#define OOB_PART_WAIT_S 5

static int read_full(int fd, void *p, size_t len)
{
	uint64_t drive_tsc = (uint64_t)(perf_tsc_hz() * OOB_DRIVE_US / 1e6);
	uint64_t part_max = (uint64_t)(perf_tsc_hz() * OOB_PART_WAIT_S);
	uint64_t part_at = 0;
	size_t done = 0;

	while (done < len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (perf_stop == 1)	/* stopped while waiting, not in a run */
			return -1;
		if (done > 0 && perf_tsc() - part_at > part_max) {
			PERF_ERR("The peer sent %zu of a message's %zu bytes and stopped: were both ends given the same options?\n",
				 done, len);
			return -1;
		}
		if (done > 0 && !(drive_side && drive_side->app_mode) &&
		    poll(&pfd, 1, 100) == 0)
			continue;
		if (drive_side && drive_side->app_mode) {
			/* Keep the engine turning while the peer works. A
			 * poll() between every two engine iterations made
			 * this end answer a READ or atomic a system call
			 * late (read_lat's server waits here): turn it for
			 * OOB_DRIVE_US between looks at the socket. */
			if (poll(&pfd, 1, 0) == 0) {
				uint64_t end = perf_tsc() + drive_tsc;

				do
					side_drive(drive_side);
				while (perf_tsc() < end);
				continue;
			}
		}
		n = read(fd, (char *)p + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
		part_at = perf_tsc();
	}
	return 0;
}

bool oob_peer_ready(void)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };

	return sock >= 0 && poll(&pfd, 1, 0) > 0;
}

static int write_full(int fd, const void *p, size_t len)
{
	size_t done = 0;

	while (done < len) {
		/* (a peer that hung up: EPIPE, not SIGPIPE's end of the
		 * process) */
		ssize_t n = send(fd, (const char *)p + done, len - done,
				 MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static int client_connect(void)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *t;
	char service[16];
	int fd = -1, rc;
	double deadline = perf_tsc() / perf_tsc_hz() + opt.connect_retry;

	snprintf(service, sizeof(service), "%d", opt.tcp_port);
	rc = getaddrinfo(opt.servername, service, &hints, &res);
	if (rc) {
		PERF_ERR("%s for %s:%d\n", gai_strerror(rc), opt.servername,
			 opt.tcp_port);
		return -1;
	}
again:
	for (t = res; t; t = t->ai_next) {
		fd = socket(t->ai_family, t->ai_socktype, t->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, t->ai_addr, t->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	if (fd < 0 && perf_tsc() / perf_tsc_hz() < deadline) {
		/* --retry_connect: the server may not listen yet */
		struct pollfd none;

		poll(&none, 0, 50);
		if (drive_side)
			side_drive(drive_side);
		goto again;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		PERF_ERR("Couldn't connect to %s:%d\n", opt.servername,
			 opt.tcp_port);
		return -1;
	}
	return fd;
}

static int server_accept(void)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE, .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *t;
	char service[16];
	int fd = -1, cfd, one = 1, rc;

	snprintf(service, sizeof(service), "%d", opt.tcp_port);
	rc = getaddrinfo(NULL, service, &hints, &res);
	if (rc) {
		PERF_ERR("%s for port %d\n", gai_strerror(rc), opt.tcp_port);
		return -1;
	}
	for (t = res; t; t = t->ai_next) {
		fd = socket(t->ai_family, t->ai_socktype, t->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, t->ai_addr, t->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0 || listen(fd, 1)) {
		PERF_ERR("Couldn't listen to port %d\n", opt.tcp_port);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	do
		cfd = accept(fd, NULL, NULL);
	while (cfd < 0 && errno == EINTR);
	close(fd);
	if (cfd < 0) {
		PERF_ERR("accept() failed\n");
		return -1;
	}
	return cfd;
}

int oob_connect(void)
{
	int one = 1;

	sock = opt.servername ? client_connect() : server_accept();
	if (sock < 0)
		return -1;
	setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

int oob_xchg(const void *mine, void *theirs, size_t len)
{
	if (opt.servername) {
		if (write_full(sock, mine, len) || read_full(sock, theirs, len))
			goto fail;
	} else {
		if (read_full(sock, theirs, len) || write_full(sock, mine, len))
			goto fail;
	}
	return 0;
fail:
	PERF_ERR("Failed to exchange data between server and clients\n");
	return -1;
}

static void key_format(const struct perf_dest *d, char msg[KEY_MSG_SIZE_GID])
{
	const uint8_t *g = d->gid.raw;

	memset(msg, 0, KEY_MSG_SIZE_GID);
	snprintf(msg, KEY_MSG_SIZE_GID,
		 "%04x:%04x:%06x:%06x:%08x:%016llx:"
		 "%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:"
		 "%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%08x:",
		 d->lid & 0xffff, d->out_reads & 0xffff, d->qpn & 0xffffff,
		 d->psn & 0xffffff, d->rkey, (unsigned long long)d->vaddr,
		 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7],
		 g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15],
		 d->srqn);
}

static int key_parse(const char msg[KEY_MSG_SIZE_GID], struct perf_dest *d)
{
	char buf[KEY_MSG_SIZE_GID + 1];
	char *tok[24], *save = NULL, *p;
	int n = 0;

	memcpy(buf, msg, KEY_MSG_SIZE_GID);
	buf[KEY_MSG_SIZE_GID] = '\0';
	for (p = strtok_r(buf, ":", &save); p && n < 24;
	     p = strtok_r(NULL, ":", &save))
		tok[n++] = p;
	if (n < 23)
		return -1;
	memset(d, 0, sizeof(*d));
	d->lid = (uint32_t)strtoul(tok[0], NULL, 16);
	d->out_reads = (uint32_t)strtoul(tok[1], NULL, 16);
	d->qpn = (uint32_t)strtoul(tok[2], NULL, 16);
	d->psn = (uint32_t)strtoul(tok[3], NULL, 16);
	d->rkey = (uint32_t)strtoul(tok[4], NULL, 16);
	d->vaddr = strtoull(tok[5], NULL, 16);
	for (int i = 0; i < 16; i++)
		d->gid.raw[i] = (uint8_t)strtoul(tok[6 + i], NULL, 16);
	d->srqn = (uint32_t)strtoul(tok[22], NULL, 16);
	return 0;
}

int oob_hand_shake(struct perf_dest *my, struct perf_dest *rem)
{
	char out[KEY_MSG_SIZE_GID], in[KEY_MSG_SIZE_GID];

	key_format(my, out);
	if (oob_xchg(out, in, sizeof(in)))
		return -1;
	if (key_parse(in, rem)) {
		PERF_ERR("Couldn't parse line <%.*s>\n", (int)sizeof(in), in);
		return -1;
	}
	return 0;
}

int oob_versions(char rem_version[PERF_VERSION_LEN])
{
	char mine[PERF_VERSION_LEN];

	memset(mine, 0, sizeof(mine));
	strncpy(mine, PERF_VERSION, sizeof(mine) - 1);
	if (oob_xchg(mine, rem_version, PERF_VERSION_LEN))
		return -1;
	rem_version[PERF_VERSION_LEN - 1] = '\0';
	oob_rem_version = atof(rem_version);
	if (oob_rem_version < 5.70) {
		PERF_ERR("Current implementation is not compatible with versions older than 5.70\n");
		return -1;
	}
	return 0;
}

#define OOB_MAX_CYCLE_BUFFER	(1u << 20)

int oob_sys_data(int *cycle_buffer, int *cache_line)
{
	uint32_t mine, theirs = 0;

	if (oob_rem_version < 5.32)
		return 0;
	mine = htonl((uint32_t)*cycle_buffer);
	if (oob_xchg(&mine, &theirs, 4))
		return -1;
	/* the peer's page size: a slot of each QP's buffer is at least that
	 * (res.c), so a value no page has (past 1 MiB, not a power of two)
	 * would have this end allocate and touch gigabytes for nothing */
	theirs = ntohl(theirs);
	if (theirs > (uint32_t)*cycle_buffer) {
		if (theirs > OOB_MAX_CYCLE_BUFFER || (theirs & (theirs - 1))) {
			PERF_ERR("The peer's page size %u is not one: ignored\n",
				 theirs);
		} else {
			*cycle_buffer = (int)theirs;
		}
	}
	mine = htonl((uint32_t)*cache_line);
	theirs = 0;
	if (oob_xchg(&mine, &theirs, 4))
		return -1;
	if ((int)ntohl(theirs) > *cache_line)
		*cache_line = (int)ntohl(theirs);
	return 0;
}

int oob_mtu(enum ibv_mtu *mtu)
{
	char cur[4] = { 0 }, rem[4] = { 0 };
	size_t n;
	long r;

	if (oob_rem_version < 5.1)
		return 0;
	n = oob_rem_version >= 5.31 ? 2 : 4;
	snprintf(cur, sizeof(cur), "%d", (int)*mtu);
	if (oob_xchg(cur, rem, n))
		return -1;
	rem[3] = '\0';
	r = strtol(rem, NULL, 10);
	if (r >= IBV_MTU_256 && r <= IBV_MTU_4096 && (long)*mtu > r)
		*mtu = (enum ibv_mtu)r;
	return 0;
}

static uint64_t dbl_be(double d)
{
	uint64_t u;

	memcpy(&u, &d, 8);
	return htobe64(u);
}

static double be_dbl(uint64_t u)
{
	double d;

	u = be64toh(u);
	memcpy(&d, &u, 8);
	return d;
}

int oob_bw_reports(const struct perf_bw_report *mine,
		   struct perf_bw_report *theirs, double rem_version)
{
	uint64_t m, t;

	memset(theirs, 0, sizeof(*theirs));
	m = htobe64(mine->size);
	if (oob_xchg(&m, &t, 8))
		return -1;
	theirs->size = be64toh(t);
	if (rem_version >= 5.33) {
		m = htobe64(mine->iters);
		if (oob_xchg(&m, &t, 8))
			return -1;
		theirs->iters = be64toh(t);
	} else {
		uint32_t m4 = htonl((uint32_t)mine->iters), t4;

		if (oob_xchg(&m4, &t4, 4))
			return -1;
		theirs->iters = ntohl(t4);
	}
	m = dbl_be(mine->bw_peak);
	if (oob_xchg(&m, &t, 8))
		return -1;
	theirs->bw_peak = be_dbl(t);
	m = dbl_be(mine->bw_avg);
	if (oob_xchg(&m, &t, 8))
		return -1;
	theirs->bw_avg = be_dbl(t);
	m = dbl_be(mine->msg_rate);
	if (oob_xchg(&m, &t, 8))
		return -1;
	theirs->msg_rate = be_dbl(t);
	return 0;
}

bool oob_abort(void)
{
	if (sock < 0)
		return false;
	(void)shutdown(sock, SHUT_RDWR);
	close(sock);
	sock = -1;
	return true;
}

int oob_close(struct perf_dest *my, struct perf_dest *rem)
{
	int ret = 0;

	if (oob_hand_shake(my, rem))
		ret = -1;
	if (sock >= 0) {
		if (write_full(sock, "done", sizeof("done")))
			ret = -1;
		close(sock);
		sock = -1;
	}
	return ret;
}
