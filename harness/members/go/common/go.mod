module herdlab.local/member/common

go 1.22
