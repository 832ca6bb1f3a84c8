#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Set up (devtools/setup.sh: packages, hugepages, build), then run the main
# job: the droce console on its embedded default (two droce nodes joined by
# a net_ring pair in one process) with its built-in script, which exercises
# every supported RDMA operation, checks the data, runs 2 s of traffic and
# ends with a summary.
#
#   bash devtools/run-demo.sh [console options, e.g. -i to stay interactive]
#
# When setup.sh found no usable hugepages, DROCE_NO_HUGE=1 and
# DROCE_EAL_EXTRA_ARGS="--no-huge -m N" are exported (the console reads it).

set -euo pipefail

DROCE_TAG=demo
# shellcheck source=devtools/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$DROCE_ROOT"

bash devtools/setup.sh </dev/null || droce_die "set-up failed (status $?), see above"
droce_load_eal_env

console=$DROCE_BUILD_DIR/app/droce-console/droce-console
if [[ ! -x $console ]]; then
	droce_die "the console was not built: $console does not exist"
fi
droce_log "running $console -- --cmdfile app/droce-console/demo.cmd $*"
exec "$console" -- --cmdfile "$DROCE_ROOT/app/droce-console/demo.cmd" "$@"
