create mw 0 type3                    # expect: create mw: the type is type1 or type2, not 'type3'
create mw 9 type2                    # expect: create mw: there is no pd 9
post bind_mw 1 len 4k                # expect: post bind_mw: give mw <id> (create mw <pd> type1|type2)
post bind_mw 1 mw 7                  # expect: post bind_mw: there is no mw 7
post bind_mw 0 mw 0                  # expect: post bind_mw: mw 0 is on pd 1 but qp 0 on pd 0
post bind_mw 1 mw 0 mr 2             # expect: post bind_mw: mr 2 was registered without mw access
post bind_mw 1 mw 0 access lw        # expect: post bind_mw: a window's access is rw, rr, ra
post bind_mw 1 mw 0 unbind           # expect: post bind_mw: only a type 1 window is unbound
post bind_mw 1 mw 0 count 2          # expect: post bind_mw: one bind at a time
post local_inv 1                     # expect: post local_inv: give the key to invalidate
post local_inv 1 mw 0 len 5          # expect: post local_inv: LOCAL_INV moves no data
post send_inv 0 len 8                # expect: post send_inv: give the key to invalidate
post write 0 len 8 mw 0              # expect: post write: mw <id> is for bind_mw, local_inv and send_inv
post write 0 len 8 rmw 0 rmr 1       # expect: post write: give one of rmr <mr>, rmw <mw> or raddr <a> rkey <k>
post write 0 len 128k rmw 0          # expect: post write: 131072 B at +0 is past the end of mw 0
destroy mr 1                         # expect: destroy mr 1: mw 0 is bound to it
destroy mw 8                         # expect: destroy mw: there is no mw 8
traffic start 0 bind_mw              # expect: traffic start: not a traffic operation 'bind_mw'
post bind_mw 1 mw 0 wait             # expect: post bind_mw: completion status mw_bind_err
