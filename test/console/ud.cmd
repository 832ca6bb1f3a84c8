# UD from the console (test/console/console_test.sh ud): two datagram QPs,
# address handles, Q_Keys given at creation and at INIT, the GRH area of a
# receive, a datagram with the wrong Q_Key dropped, an immediate.
create pd 0
create pd 1
create mr 0 64k fill random 5
create mr 1 64k
create cq 0
create cq 1
# qp 0: the default Q_Key 0x11111111; qp 1: 0x4242 at creation, 0x4343 at INIT
create qp 0 0 type ud
create qp 1 1 type ud qkey 0x4242
modify qp 0 init
modify qp 0 rtr
modify qp 0 rts
modify qp 1 init qkey 0x4343
modify qp 1 rtr
modify qp 1 rts
show qp 1
show endpoint 1
create ah 0 198.18.0.2
create ah 1 ::ffff:198.18.0.1
show ah
# explicit QPN and Q_Key: the first QP of a device is QPN 0x11
post recv 1 off 0 len 1040
post send 0 len 1000 ah 0 qpn 0x11 qkey 0x4343 wait
poll cq 1 1 len 1040 flags grh src_qp 0x11
check value 1 20 0x45 size 1
check cmp 0 0 1 40 1000
# the wrong Q_Key: dropped (rx_bad_qkey); the receive waits for the next
post recv 1 off 2048 len 2088
post send 0 off 0 len 64 ah 0 qpn 0x11 qkey 0x1 wait
post send 0 off 64 len 2048 ah 0 rqp 1 wait
poll cq 1 1 len 2088 flags grh from 0
check cmp 0 64 1 2088 2048
# back, inline, with an immediate; rqp 0 gives qp 0's Q_Key
post recv 0 off 8k len 104
post send_imm 1 off 0 len 64 inline ah 1 rqp 0 imm 0x77 wait
poll cq 0 1 len 104 flags grh,imm from 1
check cmp 1 0 0 8232 64
show stats 1
destroy ah 1
show ahs
summary
