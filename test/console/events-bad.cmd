wait event bogus                     # expect: wait event: unknown event type 'bogus'
wait event any 50                    # expect: wait event: no event in 50 ms
wait event qp_fatal 50 qp 9          # expect: wait event: there is no qp 9
wait event srq_limit 10 qp 0 srq 0   # expect: wait event: one object at a time (qp, cq or srq)
show events 5                        # expect: show events: no device 5
wait event cq_err 20 cq 0            # expect: wait event: no cq_err on cq 0 in 20 ms
