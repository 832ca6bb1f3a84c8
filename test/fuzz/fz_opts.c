/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sanitizer defaults of the fuzz harnesses: undefined behaviour stops the
 * run (libFuzzer then keeps the input) unless it is listed in the
 * suppressions of a known, reported bug (UBSAN_OPTIONS=suppressions=...,
 * see test/fuzz/known-ub.supp; the environment adds to these defaults).
 */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1:report_error_type=1";
}
