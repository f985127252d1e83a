module herdlab.local/member/kafkago

go 1.23

require (
	github.com/segmentio/kafka-go v0.4.51
	herdlab.local/member/common v0.0.0
)

require (
	github.com/klauspost/compress v1.15.9 // indirect
	github.com/pierrec/lz4/v4 v4.1.15 // indirect
)

replace herdlab.local/member/common => ../common
