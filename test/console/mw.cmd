# Memory windows from the console (test/console/console_test.sh mw): a type
# 2 window bound, written and read through, invalidated locally, bound
# again, invalidated remotely (SEND with invalidate); a type 1 window bound
# with ibv_bind_mw and unbound.
create pd 0
create pd 1
create mr 0 256k fill random 11
create mr 1 256k
# mr 2: no mw access
create mr 1 64k access lw,rw,rr
create cq 0
create cq 1
create qp 0 0
create qp 1 1
connect qp 0 1
create mw 1 type2
create mw 1 type1
show mws
# default region: the lowest of the PD with mw access (mr 1)
post bind_mw 1 mw 0 off 64k len 32k wait
show mw 0
post write 0 len 8k rmw 0 roff 1k wait
check cmp 0 0 1 65k 8k
post read 0 off 128k len 8k rmw 0 roff 1k wait
check cmp 0 128k 1 65k 8k
post local_inv 1 mw 0 wait
show mw 0
post bind_mw 1 mw 0 off 96k len 4k access rr wait
post read 0 off 160k len 4k rmw 0 wait
check cmp 0 160k 1 96k 4k
post recv 1 off 200k len 64
post send_inv 0 len 64 mw 0 wait
poll cq 1 1 len 64 flags inv
show mw 0
# type 1: ibv_bind_mw; any QP of the PD answers for it
post bind_mw 1 mw 1 off 0 len 4k access rw wait
post write 0 off 8k len 4k rmw 1 wait
check cmp 0 8k 1 0 4k
post bind_mw 1 mw 1 unbind wait
show mw 1
destroy mw 1
# bound at the end: its region cannot go
post bind_mw 1 mw 0 off 0 len 4k wait
show objects
summary
