# Packet pacing from the console (test/console/console_test.sh pace): a QP
# paced with 'rate qp' (ibv_modify_qp_rate_limit) and with modify's
# rate_limit attribute (IBV_QP_RATE_LIMIT, RTS -> RTS), traffic under each
# limit (the script checks the rates), the limit removed, the data intact.
create pd 0
create pd 1
create mr 0 256k fill inc
create mr 1 256k
create cq 0
create cq 1
create qp 0 0
create qp 1 1
create qp 0 0
connect qp 0 1 mtu 4096
rate qp 0 40000 burst 8k
show qp 0
traffic start 0 write size 4k depth 8
sleep 400
show qp 0
traffic stop
modify qp 0 rts rate_limit 0
show qp 0
modify qp 0 rts rate_limit 80000
traffic start 0 write size 2k depth 8
sleep 300
traffic stop
rate qp 0 0
post write 0 len 64k roff 0 wait
check cmp 0 0 1 0 64k
summary
