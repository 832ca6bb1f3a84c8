create ah 0 198.18.0.9 pd 1          # expect: create ah: pd 1 is on dev 1, not dev 0
create ah 7 198.18.0.2               # expect: create ah: no device 7
create ah 0 banana                   # expect: create ah: 'banana' is neither a GID nor an IPv4 address
create ah 0 198.18.0.2 sgid_index 9  # expect: create ah: ibv_create_ah(::ffff:198.18.0.2, sgid_index 9): Invalid argument
destroy ah 9                         # expect: destroy ah: there is no ah 9
post send 0 len 10                   # expect: post send: qp 0 is UD: give ah <id>
post send 0 len 10 ah 5 rqp 1        # expect: post send: there is no ah 5
post send 0 len 10 ah 0              # expect: post send: give qpn <n> (the destination QPN) or rqp <qp>
post send 0 len 10 ah 0 rqp 9        # expect: post send: there is no qp 9
post send 0 len 8000 ah 0 rqp 1      # expect: post send: a UD datagram is one packet: at most 4096 B
post write 0 len 10 ah 0 rqp 1       # expect: post write: qp 0 is UD: RDMA_WRITE is not a datagram operation
post read 0 len 10                   # expect: post read: qp 0 is UD: RDMA_READ is not a datagram operation
post bind_mw 0 mw 0                  # expect: post bind_mw: qp 0 is UD: BIND_MW is not a datagram operation
connect qp 0 1                       # expect: connect qp: qp 0 is UD: datagrams have no connection
modify qp 0 rts dqpn 5               # expect: modify qp 0: qp 0 is UD: it has no peer or destination
traffic start 0 send                 # expect: traffic start: qp 0 is UD: traffic runs on connected (RC, UC) QPs
create qp 0 0 qkey 5                 # expect: create qp: qkey is for UD QPs
create qp 0 0 type xrc               # expect: create qp: type must be rc, uc or ud, not 'xrc'
