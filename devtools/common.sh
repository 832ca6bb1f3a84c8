# SPDX-License-Identifier: BSD-3-Clause
# Shared by the devtools/*.sh scripts; sourced, never run.
# shellcheck shell=bash disable=SC2034

# The repository root, whatever the caller's cwd.
DROCE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Build directories (relative to the root unless absolute).
DROCE_BUILD_DIR=${DROCE_BUILD_DIR:-build}
DROCE_CLANG_BUILD_DIR=${DROCE_CLANG_BUILD_DIR:-build-clang}
# Written by setup.sh: one line of extra EAL arguments, empty when hugepages
# are usable, "--no-huge -m <MiB>" when they are not.
DROCE_EAL_EXTRA_FILE="$DROCE_BUILD_DIR/eal-extra-args"

droce_log() { printf '[%s] %s\n' "${DROCE_TAG:-droce}" "$*"; }
droce_die() { printf '[%s] ERROR: %s\n' "${DROCE_TAG:-droce}" "$*" >&2; exit 1; }

# Export DROCE_EAL_EXTRA_ARGS / DROCE_NO_HUGE from the file setup.sh wrote,
# unless the caller already set DROCE_EAL_EXTRA_ARGS.
droce_load_eal_env() {
	if [[ -z ${DROCE_EAL_EXTRA_ARGS+set} && -r $DROCE_EAL_EXTRA_FILE ]]; then
		DROCE_EAL_EXTRA_ARGS=$(head -n 1 "$DROCE_EAL_EXTRA_FILE")
	fi
	DROCE_EAL_EXTRA_ARGS=${DROCE_EAL_EXTRA_ARGS:-}
	case " $DROCE_EAL_EXTRA_ARGS " in
	*" --no-huge "*) DROCE_NO_HUGE=1 ;;
	*) DROCE_NO_HUGE=0 ;;
	esac
	export DROCE_EAL_EXTRA_ARGS DROCE_NO_HUGE
	if [[ $DROCE_NO_HUGE == 1 ]]; then
		droce_log "no hugepages: running with DROCE_NO_HUGE=1 DROCE_EAL_EXTRA_ARGS=\"$DROCE_EAL_EXTRA_ARGS\""
	fi
}
