# droce-console demo: two RoCEv2 nodes in one process, joined back to back by
# a net_ring pair (node A = dev 0, node B = dev 1). Every RC operation droce
# supports, single- and multi-packet, each followed by a data check; the
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

echo ===== counters
show stats
show qp 0

echo ===== traffic for 2 seconds: 64 KiB WRITEs on qp 0, 4 KiB SENDs on qp 2
traffic start 0 write size 64k depth 16
traffic start 2 send size 4k depth 32
traffic watch 2
traffic stop

summary
