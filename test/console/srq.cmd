# SRQs from the console (test/console/console_test.sh srq): one SRQ shared
# by two QPs, a two-SGE receive, the limit event, re-armed, destroyed.
create pd 0
create pd 1
create mr 0 256k fill random 9
create mr 1 256k
create cq 0
create cq 1
# srq 0: 8 WQEs of 2 SGEs, limit 3; srq 1: 4 WQEs
create srq 1 8 2 limit 3
create srq 1 4
show srqs
# qp 0, 1 on A; qp 2, 3 on B take their receives from srq 0
create qp 0 0
create qp 0 0
create qp 1 1 srq 0
create qp 1 1 srq 0
connect qp 0 2
connect qp 1 3
show qp 2
post srq recv 0 sge 1:8k:2k,1:16k:2k
post srq recv 0 off 32k len 4k
post srq recv 0 off 36k len 4k
post srq recv 0 off 40k len 4k
show srq 0
post send 0 off 0 len 4k wait
post send 1 off 4k len 4k wait
poll cq 1 2
check cmp 0 0 1 8k 2k
check cmp 0 2k 1 16k 2k
check cmp 0 4k 1 32k 4k
# 2 left, fewer than 3: the limit fired and disarmed
wait event srq_limit_reached 1000 srq 0
show srq 0
modify srq 0 limit 2
show srq 0
post send 0 off 8k len 4k wait
poll cq 1 1
check cmp 0 8k 1 36k 4k
wait event srq_limit_reached 1000 srq 0
destroy qp 3
destroy srq 1
show srq
summary
