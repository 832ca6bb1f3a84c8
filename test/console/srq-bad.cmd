create srq 9 8                       # expect: create srq: there is no pd 9
create srq 1 0                       # expect: create srq: size must be at least 1 WQE
create srq 1 8 limit 9               # expect: create srq: limit 9 is more than the size (8)
create srq 1 8 99                    # expect: create srq: sges 99 is too large (at most 16)
create qp 0 0 srq 0                  # expect: create qp: srq 0 is on dev 1, pd 0 on dev 0: one device
create qp 1 1 srq 0 rq 16            # expect: create qp: with an SRQ the QP has no receive queue of its own
create qp 1 1 srq 7                  # expect: create qp: there is no srq 7
post recv 2 len 100                  # expect: post recv: qp 2 takes its receives from srq 0: post srq recv 0
post srq recv 5                      # expect: post srq recv: there is no srq 5
post srq recv 0 sge 1:0:1k,1:1k:1k,1:2k:1k  # expect: post srq recv: ibv_post_srq_recv: Invalid argument after 0 of 1 (too many SGEs)
modify srq 0 limit 99                # expect: modify srq 0: ibv_modify_srq(limit 99): Invalid argument
modify srq 0 size 3                  # expect: modify srq: usage: modify srq <id> limit <n>
destroy srq 0                        # expect: destroy srq: srq 0 is used by qp 2
traffic start 0 send                 # expect: traffic start: the peer qp 2 takes its receives from srq 0
traffic start 2 recv                 # expect: traffic start: qp 2 takes its receives from srq 0: a receive sink
show srq 12                          # expect: show srq: there is no srq 12
