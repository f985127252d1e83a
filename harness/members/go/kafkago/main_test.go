package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/segmentio/kafka-go"
)

func TestKafkaErrorsAreRecordedByKafkasOwnNameAndCode(t *testing.T) {
	cases := []struct {
		err  error
		name string
		code int
	}{
		{kafka.Error(6), "NOT_LEADER_OR_FOLLOWER", 6},
		{kafka.Error(22), "ILLEGAL_GENERATION", 22},
		{kafka.Error(25), "UNKNOWN_MEMBER_ID", 25},
		{kafka.Error(27), "REBALANCE_IN_PROGRESS", 27},
		{kafka.Error(110), "FENCED_MEMBER_EPOCH", 110},
		{kafka.Error(113), "STALE_MEMBER_EPOCH", 113},
		{kafka.Error(-1), "UNKNOWN_SERVER_ERROR", -1},
		{fmt.Errorf("commit: %w", kafka.Error(25)), "UNKNOWN_MEMBER_ID", 25}, // wrapped
		{kafka.Error(9999), "UNKNOWN_9999", 9999},                            // a code Kafka does not name
	}
	for _, c := range cases {
		name, code := errorOf(c.err)
		if name != c.name || code == nil || *code != c.code {
			t.Errorf("errorOf(%v) = %q, %v; want %q, %d", c.err, name, code, c.name, c.code)
		}
	}
}

func TestAnErrorWithoutAKafkaCodeIsItsGoTypeWithoutACode(t *testing.T) {
	name, code := errorOf(errors.New("dial tcp 127.0.0.1:1: connect: connection refused"))
	if name != "errors.errorString" || code != nil {
		t.Errorf("errorOf = %q, %v; want errors.errorString, nil", name, code)
	}
}

func TestTheTableHasNoCodeZero(t *testing.T) {
	if _, ok := kafkaNames[0]; ok {
		t.Error("code 0 (NONE) is no error")
	}
}
