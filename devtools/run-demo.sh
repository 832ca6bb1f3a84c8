#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Set up (devtools/setup.sh: packages, hugepages, build), then run the demo:
# two droce nodes joined by a net_ring pair in one process, talking RDMA.
#
#   bash devtools/run-demo.sh [droce-demo arguments]
#
# Arguments are passed to build/app/droce-demo/droce-demo unchanged; with none
# it uses its default EAL arguments. When setup.sh found no usable hugepages,
# DROCE_NO_HUGE=1 and DROCE_EAL_EXTRA_ARGS="--no-huge -m N" are exported.

set -euo pipefail

DROCE_TAG=demo
# shellcheck source=devtools/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$DROCE_ROOT"

bash devtools/setup.sh </dev/null || droce_die "set-up failed (status $?), see above"
droce_load_eal_env

demo=$DROCE_BUILD_DIR/app/droce-demo/droce-demo
if [[ ! -x $demo ]]; then
	droce_die "the demo was not built: $demo does not exist
  (app/droce-demo/meson.build must build an executable named 'droce-demo')"
fi
droce_log "running $demo $*"
exec "$demo" "$@"
