/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The command line, on DPDK's cmdline library.
 *
 * Every verb is one cmdline instance ("show", "post", "modify qp <id>
 * <state>", ...) whose last token takes a fixed choice (the sub-command,
 * an operation, a QP state: these complete with TAB) followed by the rest
 * of the line. The instance's callback splits the words again and hands
 * them to the command's handler, which parses its own arguments: so every
 * bad argument gets a message naming the argument and the usage, never a
 * bare "Bad arguments". A line cmdline cannot match at all (a verb alone,
 * a wrong sub-command) comes to the same dispatcher, which says what is
 * wrong. New commands (UD, UC, SRQ ...) are rows in a group's table; a new
 * verb is one line in shapes[] below.
 *
 * Interactive input goes through cmdline's rdline (history, editing,
 * completion) fed from our own loop, so that the console's background work
 * (traffic, capture, app-mode engines) runs between keystrokes.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <cmdline.h>
#include <cmdline_parse.h>
#include <cmdline_rdline.h>
#include <rte_string_fns.h>

#include "console.h"

#define CLI_MAX_TOK	8
#define CLI_WORD	128
#define CLI_MAX_ARGS	128
#define CLI_MAX_CHOICES	64

static const struct con_cmd *const groups_tbl[] = {
	con_cmds_general, con_cmds_ports, con_cmds_objects, con_cmds_qp,
	con_cmds_srq, con_cmds_ah, con_cmds_mw, con_cmds_post, con_cmds_events,
	con_cmds_check, con_cmds_traffic, con_cmds_capture,
};

static const struct {
	const char *name;
	const char *desc;
} groups[] = {
	{ "general", "help, quit, echo, sleep, summary" },
	{ "ports", "ports and devices: addresses, GIDs, attributes, counters, engines, port config" },
	{ "objects", "create/destroy PDs, MRs (hugepage memory), CQs, QPs; MR contents" },
	{ "qp", "QP state machine (RC, UC, UD), connecting QPs, transport state" },
	{ "srq", "shared receive queues: create, limit, receives, state" },
	{ "ah", "address handles: where UD sends go" },
	{ "mw", "memory windows (type 1 and 2): allocate, show; bind with 'post bind_mw'" },
	{ "post", "post send/recv work requests (RC, UC, UD; windows), poll completions" },
	{ "events", "async events: show them, wait for one (scripts)" },
	{ "check", "compare data, CRC32, values (a failed check fails the command)" },
	{ "traffic", "continuous workloads with rates and latency percentiles" },
	{ "capture", "write a port's traffic to a pcapng file" },
};

/*
 * Verb shapes: "%s" a sub-command (choices from the tables), "%w" any
 * word, "%t" the rest of the line, "%h" help topics, "%e" async event
 * types (cmd_events.c), "a|b" fixed choices.
 * The last token also takes the rest of the line.
 */
static const struct {
	const char *shape;
	const char *help;
} shapes[] = {
	{ "help %h", "help [<group>|<command>]" },
	{ "quit|exit", "leave the console" },
	{ "echo %t", "echo <text>" },
	{ "sleep %t", "sleep <ms> (background work goes on)" },
	{ "summary", "what worked, data checks, rates" },
	{ "show %s", "show <what> (help show)" },
	{ "clear %s", "clear stats [<dev>]" },
	{ "port config %w ip|mtu", "port config <port> ip <a.b.c.d> | mtu <bytes>" },
	{ "create %s", "create pd|mr|cq|qp|srq|ah|mw ... (help objects)" },
	/* A more specific shape for TAB on the type; a line both match
	 * goes to the dispatcher all the same. */
	{ "create mw %w type1|type2", "create mw <pd> type1|type2" },
	{ "destroy %s", "destroy pd|mr|cq|qp|srq|ah|mw <id> | all" },
	{ "mr %s", "mr fill|dump|set|get ... (help objects)" },
	{ "modify qp %w reset|init|rtr|rts|sqd|sqe|err", "modify qp <id> <state> [attr value]..." },
	{ "modify srq %w limit", "modify srq <id> limit <n>" },
	{ "connect qp %t", "connect qp <a> <b> | <a> remote <gid> <qpn> <psn>" },
	{ "post %s", "post <op> <qp> [options] (help post)" },
	{ "post srq recv %t", "post srq recv <srq> [options]" },
	{ "poll cq %t", "poll cq <id> [count] [timeout-ms]" },
	{ "wait event %e", "wait event <type>|any [timeout-ms] (help events)" },
	{ "check %s", "check cmp|crc|value|pattern ... (help check)" },
	{ "traffic %s", "traffic start|stop|show|watch (help traffic)" },
	{ "capture %s", "capture start|stop|show (help capture)" },
};

/* --------------------------------------------------------------- tokens */

enum tok_kind { TK_KW, TK_WORD, TK_TAIL };

struct con_tok {
	struct cmdline_token_hdr hdr;	/* first: cmdline casts to it */
	enum tok_kind kind;
	const char *choices[CLI_MAX_CHOICES];
	int nb;				/* 0: any word */
	const char *help;
	unsigned int size;		/* result field size */
};

struct cli_res {
	char w[CLI_MAX_TOK][CLI_WORD];
	char tail[CON_LINE_MAX + 8];
};

/* As cmdline's own parser sees a line: '#' starts a comment. (22.11's
 * shared library does not export cmdline_isendofcommand.) */
static bool end_of_command(char c)
{
	return c == '\0' || c == '#' || c == '\n' || c == '\r';
}

static bool end_of_token(char c)
{
	return end_of_command(c) || c == ' ' || c == '\t';
}

static int tok_parse(cmdline_parse_token_hdr_t *hdr, const char *buf,
		     void *res, unsigned int ressize)
{
	struct con_tok *t = (struct con_tok *)hdr;
	unsigned int n = 0, len;
	int i;

	if (buf == NULL)
		return -1;
	while (!end_of_token(buf[n]))
		n++;
	if (n == 0)
		return -1;
	if (t->nb) {
		for (i = 0; i < t->nb; i++)
			if (strlen(t->choices[i]) == n &&
			    strncmp(t->choices[i], buf, n) == 0)
				break;
		if (i == t->nb)
			return -1;
	}
	len = n;
	if (t->kind == TK_TAIL) {
		while (!end_of_command(buf[len]))
			len++;
		while (len > n && (buf[len - 1] == ' ' || buf[len - 1] == '\t'))
			len--;
	}
	if (res) {
		if (len + 1 > ressize || len + 1 > t->size)
			return -1;
		memcpy(res, buf, len);
		((char *)res)[len] = '\0';
	}
	return (int)len;
}

static int tok_nb(cmdline_parse_token_hdr_t *hdr)
{
	return ((struct con_tok *)hdr)->nb;
}

static int tok_elt(cmdline_parse_token_hdr_t *hdr, int idx, char *dst,
		   unsigned int size)
{
	struct con_tok *t = (struct con_tok *)hdr;

	if (idx < 0 || idx >= t->nb || size == 0)
		return -1;
	strlcpy(dst, t->choices[idx], size);
	return 0;
}

static int tok_help(cmdline_parse_token_hdr_t *hdr, char *dst,
		    unsigned int size)
{
	snprintf(dst, size, "%s", ((struct con_tok *)hdr)->help);
	return 0;
}

static struct cmdline_token_ops tok_ops = {
	.parse = tok_parse,
	.complete_get_nb = tok_nb,
	.complete_get_elt = tok_elt,
	.get_help = tok_help,
};

/* ------------------------------------------------------------- tables */

static cmdline_parse_ctx_t *cli_ctx;
static struct cmdline *cli_cl;
static int cli_rc;		/* result of the last handler */

static int cmd_words(const char *name, char w[][CLI_WORD], int max)
{
	int n = 0;
	const char *p = name;

	while (*p && n < max) {
		size_t l = strcspn(p, " ");

		snprintf(w[n++], CLI_WORD, "%.*s", (int)l, p);
		p += l;
		while (*p == ' ')
			p++;
	}
	return n;
}

static bool in_choices(const struct con_tok *t, const char *s)
{
	for (int i = 0; i < t->nb; i++)
		if (strcmp(t->choices[i], s) == 0)
			return true;
	return false;
}

static void add_choice(struct con_tok *t, const char *s)
{
	if (t->nb < CLI_MAX_CHOICES && !in_choices(t, s))
		t->choices[t->nb++] = s;
}

/* Sub-command choices at position pos after the literal prefix. Strings
 * are strdup'ed once and live as long as the console. */
static void fill_subs(struct con_tok *t, char pre[][CLI_WORD], int pos)
{
	for (size_t gi = 0; gi < RTE_DIM(groups_tbl); gi++)
		for (const struct con_cmd *c = groups_tbl[gi]; c->name; c++) {
			char w[CLI_MAX_TOK][CLI_WORD];
			int n = cmd_words(c->name, w, CLI_MAX_TOK), k;

			if (n <= pos)
				continue;
			for (k = 0; k < pos; k++)
				if (strcmp(w[k], pre[k]) != 0)
					break;
			if (k < pos)
				continue;
			if (!in_choices(t, w[pos])) {
				char *s = strdup(w[pos]);

				if (s)
					add_choice(t, s);
			}
		}
}

static void fill_help_topics(struct con_tok *t)
{
	add_choice(t, "all");
	for (size_t i = 0; i < RTE_DIM(groups); i++)
		add_choice(t, groups[i].name);
	for (size_t i = 0; i < RTE_DIM(shapes); i++) {
		char w[CLI_MAX_TOK][CLI_WORD];
		char *s;

		cmd_words(shapes[i].shape, w, CLI_MAX_TOK);
		w[0][strcspn(w[0], "|")] = '\0';
		if (in_choices(t, w[0]))
			continue;
		s = strdup(w[0]);
		if (s)
			add_choice(t, s);
	}
}

static void cli_cb(void *res, struct cmdline *cl, void *data);

int cli_init(void)
{
	size_t ni = RTE_DIM(shapes);

	cli_ctx = calloc(ni + 1, sizeof(*cli_ctx));
	if (cli_ctx == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < ni; i++) {
		char w[CLI_MAX_TOK][CLI_WORD];
		int n = cmd_words(shapes[i].shape, w, CLI_MAX_TOK);
		cmdline_parse_inst_t *inst;

		inst = calloc(1, sizeof(*inst) + sizeof(inst->tokens[0]) * (size_t)(n + 1));
		if (inst == NULL)
			return -ENOMEM;
		inst->f = cli_cb;
		inst->data = (void *)(uintptr_t)i;
		inst->help_str = shapes[i].help;
		for (int k = 0; k < n; k++) {
			struct con_tok *t = calloc(1, sizeof(*t));

			if (t == NULL)
				return -ENOMEM;
			t->hdr.ops = &tok_ops;
			t->kind = k == n - 1 ? TK_TAIL : TK_KW;
			t->hdr.offset = k == n - 1 ? (unsigned int)offsetof(struct cli_res, tail) :
				(unsigned int)(offsetof(struct cli_res, w) + (size_t)k * CLI_WORD);
			t->size = k == n - 1 ? CON_LINE_MAX + 8 : CLI_WORD;
			if (strcmp(w[k], "%w") == 0) {
				t->kind = k == n - 1 ? TK_TAIL : TK_WORD;
				t->help = "id";
			} else if (strcmp(w[k], "%t") == 0) {
				t->help = "arguments";
			} else if (strcmp(w[k], "%s") == 0) {
				fill_subs(t, w, k);
				t->help = "what";
			} else if (strcmp(w[k], "%h") == 0) {
				fill_help_topics(t);
				t->help = "topic";
			} else if (strcmp(w[k], "%e") == 0) {
				for (const char *const *e = events_names(); *e; e++)
					add_choice(t, *e);
				t->help = "event type";
			} else {
				/* literal choices: a private copy to cut up,
				 * kept as long as the console runs */
				char *s = strdup(w[k]), *save = NULL;

				if (s == NULL)
					return -ENOMEM;
				for (char *c = strtok_r(s, "|", &save); c;
				     c = strtok_r(NULL, "|", &save))
					add_choice(t, c);
				t->help = k == 0 ? "command" : "choice";
			}
			inst->tokens[k] = &t->hdr;
		}
		inst->tokens[n] = NULL;
		cli_ctx[i] = inst;
	}
	cli_ctx[ni] = NULL;
	/* A parsing and completion context only: no input, no output. */
	cli_cl = cmdline_new(cli_ctx, "", -1, -1);
	if (cli_cl == NULL)
		return -ENOMEM;
	return 0;
}

void cli_free(void)
{
	if (cli_cl)
		cmdline_free(cli_cl);
	cli_cl = NULL;
	/* The tables live until exit. */
}

/* ----------------------------------------------------------- dispatch */

/* Split at blanks; "double quotes" group words. Modifies s. */
static int split_words(char *s, char **argv, int max)
{
	int n = 0;

	while (*s) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '\0' || *s == '#' || *s == '\n' || *s == '\r')
			break;
		if (n >= max)
			return -1;
		if (*s == '"') {
			argv[n++] = ++s;
			while (*s && *s != '"')
				s++;
		} else {
			argv[n++] = s;
			while (*s && *s != ' ' && *s != '\t' && *s != '\n' &&
			       *s != '\r')
				s++;
		}
		if (*s)
			*s++ = '\0';
	}
	return n;
}

static const struct con_cmd *find_cmd(int argc, char **argv, int *nwords)
{
	const struct con_cmd *best = NULL;
	int best_n = 0;

	for (size_t gi = 0; gi < RTE_DIM(groups_tbl); gi++)
		for (const struct con_cmd *c = groups_tbl[gi]; c->name; c++) {
			char w[CLI_MAX_TOK][CLI_WORD];
			int n = cmd_words(c->name, w, CLI_MAX_TOK), k;

			if (n > argc || n <= best_n)
				continue;
			for (k = 0; k < n; k++)
				if (strcmp(w[k], argv[k]) != 0)
					break;
			if (k == n) {
				best = c;
				best_n = n;
			}
		}
	*nwords = best_n;
	return best;
}

static int dispatch(int argc, char **argv)
{
	const struct con_cmd *c;
	int n;

	if (argc == 0)
		return 0;
	c = find_cmd(argc, argv, &n);
	if (c == NULL) {
		char subs[512];
		size_t len = 0;
		bool verb = false;

		subs[0] = '\0';
		for (size_t gi = 0; gi < RTE_DIM(groups_tbl); gi++)
			for (const struct con_cmd *e = groups_tbl[gi]; e->name; e++) {
				size_t l = strcspn(e->name, " ");

				if (strlen(argv[0]) != l || strncmp(e->name, argv[0], l))
					continue;
				verb = true;
				if (e->name[l] && len < sizeof(subs) - 32 &&
				    !strstr(subs, e->name + l))
					len += (size_t)snprintf(subs + len, sizeof(subs) - len,
								"%s", e->name + l);
			}
		if (!verb)
			return con_err("unknown command '%s' (type 'help' for the list)",
				       argv[0]);
		if (argc < 2)
			return con_err("'%s' needs one of:%s (help %s)", argv[0], subs,
				       argv[0]);
		return con_err("%s: unknown '%s'; one of:%s (help %s)", argv[0],
			       argv[1], subs, argv[0]);
	}
	return c->fn(argc - n, argv + n);
}

static void cli_cb(void *res, struct cmdline *cl, void *data)
{
	struct cli_res *r = res;
	size_t si = (size_t)(uintptr_t)data;
	char w[CLI_MAX_TOK][CLI_WORD];
	char *argv[CLI_MAX_ARGS];
	int nt = cmd_words(shapes[si].shape, w, CLI_MAX_TOK), argc = 0, m;

	(void)cl;
	for (int k = 0; k < nt - 1; k++)
		argv[argc++] = r->w[k];
	m = split_words(r->tail, argv + argc, CLI_MAX_ARGS - argc);
	if (m < 0) {
		cli_rc = con_err("too many words on one line (at most %d)",
				 CLI_MAX_ARGS);
		return;
	}
	cli_rc = dispatch(argc + m, argv);
}

int cli_run_line(const char *line)
{
	char buf[CON_LINE_MAX + 2];
	size_t len = strlen(line);
	const char *p = line;
	int ret;

	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '\0' || *p == '#' || *p == '\n' || *p == '\r')
		return 0;
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (len > CON_LINE_MAX)
		return con_err("line too long (%zu characters; at most %d)", len,
			       CON_LINE_MAX);
	memcpy(buf, line, len);
	buf[len] = '\n';
	buf[len + 1] = '\0';
	cli_rc = 0;
	g.interrupted = 0;
	ret = cmdline_parse(cli_cl, buf);
	if (ret < 0) {
		/* Not a complete match: the dispatcher says what is wrong (or
		 * runs a command given without its optional arguments). */
		char *argv[CLI_MAX_ARGS];
		int argc;

		buf[len] = '\0';
		argc = split_words(buf, argv, CLI_MAX_ARGS);
		cli_rc = argc < 0 ? con_err("too many words on one line") :
			 dispatch(argc, argv);
	}
	if (cli_rc)
		g.tally.cmds_fail++;
	else
		g.tally.cmds_ok++;
	fflush(stdout);
	return cli_rc;
}

/* ---------------------------------------------------------------- help */

static void print_cmd(const struct con_cmd *c)
{
	printf("  %s%s%s\n      %s\n", c->name, c->args[0] ? " " : "", c->args,
	       c->help);
}

void cli_help_usage(const char *name)
{
	size_t l = strlen(name);

	for (size_t gi = 0; gi < RTE_DIM(groups_tbl); gi++)
		for (const struct con_cmd *c = groups_tbl[gi]; c->name; c++)
			if (strncmp(c->name, name, l) == 0 &&
			    (c->name[l] == '\0' || c->name[l] == ' '))
				printf("usage: %s%s%s\n", c->name, c->args[0] ? " " : "",
				       c->args);
}

static int cmd_help(int argc, char **argv)
{
	if (argc == 0) {
		printf("droce-console: operate and test droce. Command groups (help <group>):\n");
		for (size_t i = 0; i < RTE_DIM(groups); i++)
			printf("  %-9s %s\n", groups[i].name, groups[i].desc);
		printf("help all: every command. TAB completes commands and fixed choices,\n"
		       "'?' lists what may come next; arrows browse the history.\n"
		       "Ids: dev N (a droce device), port N (an ethdev port), pd/mr/cq/qp/srq/ah/mw N\n"
		       "(the console's own ids). Numbers: decimal or 0x..; sizes take k/m/g.\n");
		return 0;
	}
	if (argc > 1)
		return con_err("help: one topic at a time (help <group>|<command>)");
	for (size_t i = 0; i < RTE_DIM(groups); i++) {
		if (strcmp(argv[0], groups[i].name) && strcmp(argv[0], "all"))
			continue;
		printf("%s: %s\n", groups[i].name, groups[i].desc);
		for (const struct con_cmd *c = groups_tbl[i]; c->name; c++)
			print_cmd(c);
		if (strcmp(argv[0], "all"))
			return 0;
	}
	if (strcmp(argv[0], "all") == 0)
		return 0;
	{
		bool found = false;
		size_t l = strlen(argv[0]);

		for (size_t gi = 0; gi < RTE_DIM(groups_tbl); gi++)
			for (const struct con_cmd *c = groups_tbl[gi]; c->name; c++)
				if (strncmp(c->name, argv[0], l) == 0 &&
				    (c->name[l] == '\0' || c->name[l] == ' ')) {
					print_cmd(c);
					found = true;
				}
		if (!found)
			return con_err("help: no group or command '%s' (type 'help')",
				       argv[0]);
	}
	return 0;
}

static int cmd_quit(int argc, char **argv)
{
	(void)argv;
	if (argc)
		return con_err("quit takes no arguments");
	g.quit = true;
	return 0;
}

static int cmd_echo(int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		printf("%s%s", i ? " " : "", argv[i]);
	printf("\n");
	return 0;
}

static bool never(void *arg)
{
	(void)arg;
	return false;
}

static int cmd_sleep(int argc, char **argv)
{
	uint64_t ms;
	int ret;

	if (argc != 1)
		return con_err("sleep: usage: sleep <ms>");
	if (con_arg_u64("sleep", "milliseconds", argv[0], &ms, 3600 * 1000))
		return -1;
	ret = con_wait(ms * 1000 + 1, never, NULL);
	if (ret == -EINTR)
		return con_err("sleep: interrupted");
	return 0;
}

static int cmd_summary(int argc, char **argv);

const struct con_cmd con_cmds_general[] = {
	{ "general", "help", "[<group>|<command>|all]", "list command groups, or the commands of a group", cmd_help },
	{ "general", "quit", "", "leave (destroys every object, stops traffic and capture)", cmd_quit },
	{ "general", "exit", "", "same as quit", cmd_quit },
	{ "general", "echo", "<text>", "print text (for scripts)", cmd_echo },
	{ "general", "sleep", "<ms>", "wait; traffic, capture and app-mode engines keep running", cmd_sleep },
	{ "general", "summary", "", "operations posted and completed, data checks, traffic rates; fails if anything failed", cmd_summary },
	{ NULL, NULL, NULL, NULL, NULL },
};

static int cmd_summary(int argc, char **argv)
{
	const struct con_tally *t = &g.tally;
	uint64_t errs = 0;
	int used = 0, tfail;

	(void)argv;
	if (argc)
		return con_err("summary takes no arguments");
	printf("==================== summary ====================\n");
	printf("  %-10s %-3s %-22s %9s %10s %7s %10s  %s\n", "operation", "qp", "verbs",
	       "posted", "completed", "errors", "largest-B", "result");
	for (int op = 0; op < CON_OP_MAX; op++)
		for (int tr = 0; tr < CON_TR_MAX; tr++) {
			bool ok;

			uint64_t x = t->expected[op][tr];
			char xs[40] = "";

			if (!t->posted[op][tr] && !t->ok[op][tr] && !t->err[op][tr] && !x)
				continue;
			used++;
			ok = t->err[op][tr] == 0 && (t->ok[op][tr] > 0 || x > 0);
			if (x)
				snprintf(xs, sizeof(xs), ", %" PRIu64 " expected error%s", x,
					 x == 1 ? "" : "s");
			printf("  %-10s %-3s %-22s %9" PRIu64 " %10" PRIu64 " %7" PRIu64 " %10" PRIu64 "  %s%s\n",
			       con_ops[op].name, con_tr_names[tr], con_ops[op].verbs,
			       t->posted[op][tr], t->ok[op][tr], t->err[op][tr],
			       t->max_len[op][tr],
			       ok ? "ok" : t->err[op][tr] ? "ERRORS" : "no completion seen", xs);
			errs += t->err[op][tr];
		}
	if (!used)
		printf("  (nothing posted)\n");
	if (t->other_ok || t->other_err)
		printf("  other completions (own wr_id): %" PRIu64 " ok, %" PRIu64 " errors\n",
		       t->other_ok, t->other_err);
	if (t->expected_err)
		printf("  expected error completions (expect <status>): %" PRIu64 "\n", t->expected_err);
	printf("  (completed = successful completions seen by poll/wait; unsignaled sends have none)\n");
	printf("  data checks: %" PRIu64 " passed, %" PRIu64 " failed\n",
	       t->checks_ok, t->checks_fail);
	tfail = traffic_summary();
	printf("  commands: %" PRIu64 " ok, %" PRIu64 " failed\n", t->cmds_ok,
	       t->cmds_fail);
	if (t->checks_fail || errs || t->cmds_fail || tfail) {
		printf("RESULT: FAILED (%" PRIu64 " failed check%s, %" PRIu64
		       " error completion%s, %" PRIu64 " failed command%s, %d failed traffic flow%s)\n",
		       t->checks_fail, t->checks_fail == 1 ? "" : "s", errs,
		       errs == 1 ? "" : "s", t->cmds_fail, t->cmds_fail == 1 ? "" : "s",
		       tfail, tfail == 1 ? "" : "s");
		return -1;
	}
	printf("RESULT: all operations completed and all %" PRIu64 " data checks passed\n",
	       t->checks_ok);
	return 0;
}

/* ---------------------------------------------------------- interactive */

static struct termios term_saved;
static bool term_raw;

static void term_restore(void)
{
	if (term_raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &term_saved);
	term_raw = false;
}

static void term_set_raw(void)
{
	struct termios t;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &term_saved) != 0)
		return;
	t = term_saved;
	/* Characters one by one, no echo (rdline echoes), ^C as a key. */
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0) {
		term_raw = true;
		g.tty = true;
		atexit(term_restore);
	}
}

static int rl_write(struct rdline *rdl, char c)
{
	(void)rdl;
	return write(STDOUT_FILENO, &c, 1) == 1 ? 0 : -1;
}

static void rl_validate(struct rdline *rdl, const char *buf, unsigned int size)
{
	(void)rdl;
	(void)size;
	g.interactive = true;
	g.in_command = true;
	cli_run_line(buf);
	g.in_command = false;
}

/* What a choice offered at the end of buf does: the command's own help, a
 * group's description, or the verb's usage. */
static const char *choice_help(const char *buf, const char *choice)
{
	char full[CLI_WORD * 4];
	size_t n = 0, l = strlen(buf);

	/* the complete words of buf (the partial last one is being completed) */
	while (l && buf[l - 1] != ' ' && buf[l - 1] != '\t')
		l--;
	while (l && (buf[l - 1] == ' ' || buf[l - 1] == '\t'))
		l--;
	if (l >= sizeof(full) - CLI_WORD)
		return "";
	memcpy(full, buf, l);
	n = l;
	snprintf(full + n, sizeof(full) - n, "%s%s", n ? " " : "", choice);
	for (size_t gi = 0; gi < RTE_DIM(groups_tbl); gi++)
		for (const struct con_cmd *c = groups_tbl[gi]; c->name; c++)
			if (strcmp(c->name, full) == 0)
				return c->help;
	/* a word that starts longer commands ("post srq" recv): the first's */
	l = strlen(full);
	for (size_t gi = 0; gi < RTE_DIM(groups_tbl); gi++)
		for (const struct con_cmd *c = groups_tbl[gi]; c->name; c++)
			if (strncmp(c->name, full, l) == 0 && c->name[l] == ' ')
				return c->help;
	if (n == 0 || strncmp(buf, "help", 4) == 0) {
		for (size_t i = 0; i < RTE_DIM(groups); i++)
			if (strcmp(groups[i].name, choice) == 0)
				return groups[i].desc;
		for (size_t i = 0; i < RTE_DIM(shapes); i++) {
			size_t k = strcspn(shapes[i].shape, " |");

			if (strlen(choice) == k && strncmp(shapes[i].shape, choice, k) == 0)
				return shapes[i].help;
		}
	}
	return "";
}

static int rl_complete(struct rdline *rdl, const char *buf, char *dst,
		       unsigned int size, int *state)
{
	/* Choices listed so far: two shapes may offer the same word
	 * ("create %s" and "create mw ..."), list it once. */
	static char seen[CLI_MAX_CHOICES][CLI_WORD];
	static int nseen;
	int ret;

	(void)rdl;
	if (*state == 0)
		nseen = 0;
	for (;;) {
		char choice[CLI_WORD];
		const char *h;
		size_t k;
		int i;

		ret = cmdline_complete(cli_cl, buf, state, dst, size);
		/* Listing ('?' or TAB on several choices): cmdline gives
		 * "choice [token help]: instance help"; show the choice and
		 * what it does instead. */
		if (ret != CMDLINE_PARSE_COMPLETE_AGAIN || dst[0] == '[' || size <= 16)
			return ret;
		k = strcspn(dst, " [");
		snprintf(choice, sizeof(choice), "%.*s", (int)k, dst);
		for (i = 0; i < nseen; i++)
			if (strcmp(seen[i], choice) == 0)
				break;
		if (i < nseen)
			continue;	/* listed already */
		if (nseen < CLI_MAX_CHOICES)
			snprintf(seen[nseen++], CLI_WORD, "%s", choice);
		h = choice_help(buf, choice);
		snprintf(dst, size, "%-14s %.*s%s", choice, 62, h, strlen(h) > 62 ? "..." : "");
		return ret;
	}
}

/* Feed chars to rdline; returns -1 when the console should leave. */
static int feed(struct rdline *rdl, const char *s, unsigned int n)
{
	for (unsigned int i = 0; i < n && !g.quit; i++) {
		int r = rdline_char_in(rdl, s[i]);

		if (r == RDLINE_RES_VALIDATED) {
			const char *line = rdline_get_buffer(rdl);
			const char *last = rdline_get_history_item(rdl, 0);
			size_t l = strcspn(line, "\n");

			if (l > 0 && !(last && strlen(last) == l &&
				       strncmp(last, line, l) == 0))
				rdline_add_history(rdl, line);
			if (!g.quit)
				rdline_newline(rdl, CON_PROMPT);
		} else if (r == RDLINE_RES_EOF || r == RDLINE_RES_EXITED) {
			printf("\n");
			return -1;
		}
	}
	return g.quit ? -1 : 0;
}

int cli_interactive(void)
{
	struct rdline *rdl;

	rdl = rdline_new(rl_write, rl_validate, rl_complete, NULL);
	if (rdl == NULL)
		return con_err("cannot set up the command line");
	term_set_raw();
	g.interactive = true;
	fflush(stdout);
	rdline_newline(rdl, CON_PROMPT);
	while (!g.quit) {
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		char buf[256];
		ssize_t n;
		int r;

		if (g.terminate)
			break;		/* SIGINT/SIGTERM */
		if (g.pending_len) {
			char tmp[sizeof(g.pending)];
			unsigned int len = g.pending_len;

			memcpy(tmp, g.pending, len);
			g.pending_len = 0;
			if (feed(rdl, tmp, len))
				break;
			continue;
		}
		if (g.stdin_eof) {
			printf("\n");
			break;
		}
		r = poll(&pfd, 1, con_idle_timeout_ms());
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0) {
			n = read(STDIN_FILENO, buf, sizeof(buf));
			if (n <= 0) {
				printf("\n");
				break;		/* end of input */
			}
			if (feed(rdl, buf, (unsigned int)n))
				break;
		}
		con_service();
	}
	fflush(stdout);
	term_restore();
	g.interactive = false;
	rdline_free(rdl);
	return 0;
}
