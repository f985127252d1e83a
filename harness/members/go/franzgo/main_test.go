package main

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestTheGroupIsCooperativeOnlyWhenEveryBalancerIs(t *testing.T) {
	cases := []struct {
		balancers []kgo.GroupBalancer
		want      bool
	}{
		{[]kgo.GroupBalancer{kgo.CooperativeStickyBalancer()}, true},
		{[]kgo.GroupBalancer{kgo.RangeBalancer()}, false},
		{[]kgo.GroupBalancer{kgo.StickyBalancer()}, false},
		{[]kgo.GroupBalancer{kgo.CooperativeStickyBalancer(), kgo.RangeBalancer()}, false},
		{[]kgo.GroupBalancer{kgo.RangeBalancer(), kgo.CooperativeStickyBalancer()}, false},
		{nil, false},
	}
	for _, c := range cases {
		if got := allCooperative(c.balancers); got != c.want {
			t.Errorf("allCooperative(%d balancers) = %v, want %v", len(c.balancers), got, c.want)
		}
	}
}

func TestWithoutABalancersOptionTheClientsDefaultIsCooperative(t *testing.T) {
	// no group: the client opens no connection until asked to
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	bs, ok := cl.OptValue("Balancers").([]kgo.GroupBalancer)
	if !ok || !allCooperative(bs) {
		t.Errorf("kgo's default balancers %v are not all cooperative", bs)
	}
}

func TestErrorsAreKafkasNameAndCodeOrTheGoType(t *testing.T) {
	name, code := errorOf(kerr.UnknownMemberID)
	if name != "UNKNOWN_MEMBER_ID" || code == nil || *code != 25 {
		t.Errorf("errorOf(UnknownMemberID) = %q, %v", name, code)
	}
	name, code = errorOf(errors.New("unable to dial: dial tcp 127.0.0.1:1: connect: connection refused"))
	if name != "errors.errorString" || code != nil {
		t.Errorf("errorOf(a plain error) = %q, %v", name, code)
	}
}
