post read 0 len 8 wait               # expect: post read: qp 0 is UC: RDMA_READ needs an RC QP
post cas 0 compare 0 swap 1          # expect: post cas: qp 0 is UC: ATOMIC_CMP_AND_SWP needs an RC QP
post faa 0                           # expect: post faa: qp 0 is UC: ATOMIC_FETCH_AND_ADD needs an RC QP
post send_inv 0 len 8 rkey 1         # expect: post send_inv: qp 0 is UC: SEND_WITH_INV needs an RC QP
post send 0 len 8 ah 0 qpn 1         # expect: post send: ah, qpn, qkey and rqp address UD sends; qp 0 is UC
post read 0 len 8 nocheck wait       # expect: post read: ibv_post_send: Invalid argument
post write 5 len 8                   # expect: post write: there is no qp 5
traffic start 0 read                 # expect: traffic start: qp 0 is UC: RDMA_READ needs an RC QP
connect qp 2 0                       # expect: connect qp: qp 2 is RC but qp 0 is UC
