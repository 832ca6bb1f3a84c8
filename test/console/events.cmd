# Async events from the console (test/console/console_test.sh events): an
# SRQ's limit, a responder's access error and the last WQE of its SRQ QP,
# each waited for; show events drains what is left.
create pd 0
create pd 1
create mr 0 64k fill inc
# mr 1: no remote rights; mr 2: B's receives
create mr 1 64k access local
create mr 1 64k
create cq 0
create cq 1
create srq 1 4 limit 1
create qp 0 0
create qp 1 1 srq 0
connect qp 0 1
show events
post srq recv 0 mr 2 off 0 len 4k
post send 0 len 1k wait
poll cq 1 1
check cmp 0 0 2 0 1k
wait event srq_limit_reached
post write 0 len 1k rmr 1 wait expect rem_access_err
wait event qp_access_err 1000 qp 1 dev 1
wait event qp_last_wqe_reached 1000 qp 1
show events
show events 0
modify qp 0 reset
modify qp 1 reset
summary
