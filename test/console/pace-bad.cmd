rate qp 0                            # expect: rate qp: usage:
rate qp 7 1000                       # expect: rate qp: there is no qp 7
rate qp 0 100000001                  # expect: rate qp: ibv_modify_qp_rate_limit: Invalid argument
rate qp 0 1000 burst 17m             # expect: rate qp: ibv_modify_qp_rate_limit: Invalid argument
rate qp 0 1000 speed 3               # expect: rate qp: unknown option 'speed' (burst pkt)
modify qp 0 rts rate_limit 100000001 # expect: modify qp 0: RTS -> RTS failed: Invalid argument
modify qp 2 init rate_limit 5        # expect: modify qp 2: RESET -> INIT failed: Invalid argument
