# droce-console demo: two RoCEv2 nodes in one process, joined back to back by
# a net_ring pair (node A = dev 0, node B = dev 1). Every RC operation droce
# supports, single- and multi-packet, each followed by a data check; UD
# datagrams (with their GRH), UC, an SRQ shared by two QPs, memory windows
# (bound, written through, invalidated, refused) and async events; the
# counters; two seconds of traffic; a summary.
#
#   droce-console -- --cmdfile app/droce-console/demo.cmd
#
# Add -i after it to keep the objects and explore ('help').

echo ===== the two nodes
show devices
show gid
show engines

echo ===== objects: a PD, two 4 MiB MRs (hugepage memory), a CQ and a QP per node
create pd 0
create pd 1
# mr 0: A's source (random bytes)    mr 1: A's landing zone
create mr 0 4m fill random 1
create mr 0 4m
# mr 2: B's landing zone             mr 3: B's source (random bytes)
create mr 1 4m
create mr 1 4m fill random 2
create cq 0 4096
create cq 1 4096
create qp 0 0
create qp 1 1
connect qp 0 1 mtu 1024
show qp 0

echo ===== SEND, 64 KiB (64 packets of 1 KiB): A -> B
post recv 1 mr 2 off 0 len 64k
post send 0 mr 0 off 0 len 64k wait
poll cq 1 1
check cmp 0 0 2 0 64k

echo ===== SEND with immediate, 8 KiB: B -> A
post recv 0 mr 1 off 0 len 8k
post send_imm 1 mr 3 off 0 len 8k imm 0xc0ffee wait
poll cq 0 1
check cmp 3 0 1 0 8k

echo ===== SEND, 64 B inline, and a SEND gathered from two SGEs (100 B + 200 B): A -> B
post recv 1 mr 2 off 128k len 64
post send 0 mr 0 off 0 len 64 inline wait
poll cq 1 1
check cmp 0 0 2 128k 64
post recv 1 mr 2 off 192k len 4k
post send 0 sge 0:1000:100,0:5000:200 wait
poll cq 1 1
check cmp 0 1000 2 192k 100
check cmp 0 5000 2 196708 200

echo ===== RDMA WRITE, 1 MiB (1024 packets): A -> B
post write 0 mr 0 off 0 len 1m rmr 2 roff 1m wait
check cmp 0 0 2 1m 1m
check crc 2 1m 1m eq 0 0

echo ===== RDMA WRITE with immediate, 300000 B: B -> A (consumes a receive at A)
post recv 0 mr 1 off 0 len 16
post write_imm 1 mr 3 off 0 len 300000 rmr 1 roff 1m imm 0x1234 wait
poll cq 0 1
check cmp 3 0 1 1m 300000

echo ===== RDMA READ, 500000 B: A reads B's source
post read 0 mr 1 off 2m len 500000 rmr 3 roff 0 wait
check cmp 3 0 1 2m 500000

echo ===== atomics on a counter in B's memory (the original values land in A's)
mr set 2 3m 1000
post faa 0 mr 1 off 3m rmr 2 roff 3m add 5 count 10 wait
check value 2 3m 1050
check value 1 3m 1045
post cas 0 mr 1 off 3m rmr 2 roff 3m compare 1050 swap 7 wait
check value 2 3m 7
check value 1 3m 1050
post cas 0 mr 1 off 3m rmr 2 roff 3m compare 1050 swap 9 wait
check value 2 3m 7

echo ===== 1000 unsignaled WRITEs of 4 KiB (one completion per batch), then a fenced READ back
post write 0 mr 0 off 2m len 4k rmr 2 roff 2m count 1000 unsig wait
post read 0 mr 1 off 3149824 len 4k rmr 2 roff 2m fence wait
check cmp 0 2m 1 3149824 4k

echo ===== a second QP pair at path MTU 4096: 1 MiB WRITE in 256 packets, 64 KiB READ
create qp 0 0
create qp 1 1
connect qp 2 3 mtu 4096
mr fill 0 inc off 3m len 1m
post write 2 mr 0 off 3m len 1m rmr 2 roff 0 wait
check pattern 2 0 1m inc
post read 2 mr 1 off 0 len 64k rmr 2 roff 0 wait
check pattern 1 0 64k inc

echo ===== UD: datagram QPs; each send names its destination (address handle, QPN, Q_Key)
# mr 4: B's landing zone for UD, UC, the SRQ and the windows (access all: windows may be bound)
create mr 1 1m
# qp 4 on A, qp 5 on B: no connection; INIT sets the Q_Key
create qp 0 0 type ud qkey 0x2222
create qp 1 1 type ud qkey 0x2222
modify qp 4 init
modify qp 4 rtr
modify qp 4 rts
modify qp 5 init
modify qp 5 rtr
modify qp 5 rts
# ah 0: from A to B's GID; ah 1: from B to A's
create ah 0 198.18.0.2
create ah 1 198.18.0.1
show qp 5
# A receive of 40 + 2048 B: the GRH area first (the IPv4 header in its last
# 20 bytes), the payload at +40. rqp 5: qp 5's QPN and Q_Key.
post recv 5 mr 4 off 0 len 2088
post send 4 mr 0 off 0 len 2048 ah 0 rqp 5 wait
poll cq 1 1 len 2088 flags grh from 4
check value 4 20 0x45 size 1
check cmp 0 0 4 40 2048
# back from B with an immediate, the Q_Key given
post recv 4 mr 1 off 3584k len 1064
post send_imm 5 mr 3 off 0 len 1024 ah 1 rqp 4 qkey 0x2222 imm 0x5eed wait
poll cq 0 1 len 1064 flags grh,imm from 5
check cmp 3 0 1 3670056 1024

echo ===== UC: unacknowledged; a WQE completes once sent, so data is checked after a message B completes
create qp 0 0 type uc
create qp 1 1 type uc
connect qp 6 7 mtu 1024
post write 6 mr 0 off 0 len 256k rmr 4 roff 64k wait
post recv 7 mr 4 off 512k len 4k
post send_imm 6 mr 0 off 256k len 4k imm 7 wait
poll cq 1 1 flags imm
check cmp 0 0 4 64k 256k
check cmp 0 256k 4 512k 4k

echo ===== an SRQ of B shared by two QPs (limit 2: an async event when fewer than 2 receives remain)
create srq 1 16 limit 2
# qp 8, 9 on A; qp 10, 11 on B take their receives from srq 0
create qp 0 0
create qp 0 0
create qp 1 1 srq 0
create qp 1 1 srq 0
connect qp 8 10 mtu 4096
connect qp 9 11 mtu 4096
post srq recv 0 mr 4 off 640k len 8k
post srq recv 0 mr 4 off 648k len 8k
post srq recv 0 mr 4 off 656k len 8k
post srq recv 0 mr 4 off 664k len 8k
show srq 0
post send 8 mr 0 off 0 len 8k wait
post send 9 mr 0 off 8k len 8k wait
post send 8 mr 0 off 16k len 8k wait
poll cq 1 3
check cmp 0 0 4 640k 24k
wait event srq_limit_reached 1000 srq 0
show srq 0

echo ===== memory windows: B binds a type 2 window to qp 1, A writes and reads through it
create mw 1 type2
post bind_mw 1 mw 0 mr 4 off 768k len 64k access rw,rr wait
show mw 0
post write 0 mr 0 off 0 len 16k rmw 0 roff 4k wait
check cmp 0 0 4 772k 16k
# invalidated by B, then bound again (the next rkey)
post local_inv 1 mw 0 wait
post bind_mw 1 mw 0 mr 4 off 768k len 64k wait
post read 0 mr 1 off 3600k len 16k rmw 0 roff 4k wait
check cmp 4 772k 1 3600k 16k
# a SEND with invalidate: B's receive completes WITH_INV and the window goes
post recv 1 mr 2 off 3584k len 64
post send_inv 0 mr 0 off 0 len 64 mw 0 wait
poll cq 1 1 flags inv
show mw 0
# so a WRITE through it is refused: B's qp 1 reports an access error
post write 0 mr 0 off 0 len 4k rmw 0 wait expect rem_access_err
wait event qp_access_err 1000 qp 1
# a type 1 window (ibv_bind_mw), read-only, any QP of B's PD answers for it
create mw 1 type1
post bind_mw 3 mw 1 mr 4 off 900k len 4k access rr wait
post read 2 mr 1 off 3700k len 4k rmw 1 wait
check cmp 4 900k 1 3700k 4k
show mws
show events
# qp 0 and qp 1 are in ERR since the refused WRITE: reset, connect again
modify qp 0 reset
modify qp 1 reset
connect qp 0 1 mtu 1024

echo ===== counters
show stats
show qp 0

echo ===== traffic for 2 seconds: 64 KiB WRITEs on qp 0, 4 KiB SENDs on qp 2
traffic start 0 write size 64k depth 16
traffic start 2 send size 4k depth 32
traffic watch 2
traffic stop

summary
