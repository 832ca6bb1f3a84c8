# UC from the console (test/console/console_test.sh uc): a connected pair,
# WRITE, WRITE with immediate, SEND (gathered, inline), traffic; the data is
# checked after a message the receiver completed (UC completes once sent).
create pd 0
create pd 1
create mr 0 256k fill inc
create mr 1 256k
create cq 0
create cq 1
create qp 0 0 type uc
create qp 1 1 type uc
connect qp 0 1 mtu 1024
show qp 0
show endpoint 0
post write 0 len 64k roff 0 wait
post recv 1 off 128k len 4k
post write_imm 0 off 64k len 4k roff 64k imm 0x99 wait
poll cq 1 1 flags imm
check cmp 0 0 1 0 64k
check cmp 0 64k 1 64k 4k
post recv 1 off 128k len 8k
post send 0 sge 0:0:4k,0:8k:4k wait
poll cq 1 1 len 8192
check cmp 0 0 1 128k 4k
check cmp 0 8k 1 132k 4k
post recv 1 off 160k len 64
post send_imm 0 len 32 inline imm 5 wait
poll cq 1 1 len 32 flags imm
check cmp 0 0 1 160k 32
traffic start 0 write size 4k depth 8
sleep 200
traffic stop
traffic start 0 send size 1k depth 4
sleep 200
traffic stop
# an RC QP, to show that the two do not mix
create qp 1 1
summary
