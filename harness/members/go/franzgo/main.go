// Command franzgo is a herdlab coordinator member on twmb/franz-go (kgo): one consumer group member,
// speaking the child protocol of harness/members/child.py.
//
// Contract
//   - The client: kgo.NewClient with the group, the topic, DisableAutoCommit (the member commits by its
//     own policy), BlockRebalanceOnPoll (the rebalance hooks run between polls, as the Java consumer's
//     listener runs inside poll), InstanceID for a static member, and the options of the command line.
//   - OnPartitionsAssigned (called once per group session, also when nothing new is assigned):
//     joined{generation, member} from Client.GroupMetadata (stored at the JoinGroup response, before
//     the hook), then assigned{partitions} (eager: the whole assignment; cooperative: what was added).
//   - OnPartitionsRevoked: a synchronous commit of what the policy has pending for those partitions,
//     then revoked{partitions, lost:false}; the end-of-session call that revokes nothing is skipped
//     when every configured balancer is cooperative (kgo's default, cooperative-sticky, is): the group
//     then runs a cooperative protocol, where nothing is revoked there. (kgo decides from the protocol
//     the group chose, which it does not expose; a list mixing eager and cooperative balancers is
//     taken as eager; with ServerSideBalancer, KIP-848's consumer protocol, it is always incremental.)
//     OnPartitionsLost (a fatal group error):
//     revoked{partitions, lost:true}, no commit. A group management error (HookGroupManageError) is a
//     heartbeat_error line.
//   - Commits: CommitOffsets (interval) and CommitOffsetsSync (revoke, stop) with an onDone callback:
//     one commit line per partition from the response's per-partition error code (kerr's name, which
//     is Kafka's), or the request's error for all of them (its Go type when it has no Kafka code:
//     common.ErrorName).
//   - Stall: the poll loop holds the rebalance gate (a poll whose records are not yet processed,
//     which BlockRebalanceOnPoll keeps until AllowRebalance) and stops polling: the heartbeat goes on,
//     and the member's hooks (so its part of a rebalance) wait until it is unstalled.
//   - ServerSideBalancer (KIP-848's consumer group protocol): the member first asks the cluster for its
//     API versions and fails (exit 2, one line) unless it serves ConsumerGroupHeartbeat v1, since kgo
//     would otherwise run the classic protocol without a word.
//   - SIGTERM: the poll loop holds the rebalance gate, commits what the policy has pending
//     (synchronously, so no revoke runs between the last poll and this commit), allows rebalances and
//     ends; then Close (a dynamic member leaves; its final revoke has nothing left to commit),
//     stopped{clean:true, close_ms}, exit 0. Stopped while held (--hold-until): exit 0 with no event.
package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"herdlab.local/member/common"
)

const client = "franz-go"

//go:embed options.json
var optionsJSON []byte

var balancers = map[string]func() kgo.GroupBalancer{
	"range":              kgo.RangeBalancer,
	"roundrobin":         kgo.RoundRobinBalancer,
	"sticky":             kgo.StickyBalancer,
	"cooperative-sticky": kgo.CooperativeStickyBalancer,
}

type member struct {
	args        common.Args
	opts        []kgo.Opt
	cooperative atomic.Bool // every balancer is cooperative (see the contract)
	policy      *common.CommitPolicy
	gate        *common.Gate
	stop        chan struct{}
}

func (m *member) setters() map[string]func(string) error {
	dur := func(f func(time.Duration) kgo.GroupOpt) func(string) error {
		return func(v string) error { m.opts = append(m.opts, f(common.ParseDuration(v))); return nil }
	}
	return map[string]func(string) error{
		"Balancers": func(v string) error {
			var bs []kgo.GroupBalancer
			for _, name := range strings.Split(v, ",") {
				bs = append(bs, balancers[strings.TrimSpace(name)]())
			}
			m.opts = append(m.opts, kgo.Balancers(bs...))
			return nil
		},
		"SessionTimeout":    dur(kgo.SessionTimeout),
		"HeartbeatInterval": dur(kgo.HeartbeatInterval),
		"RebalanceTimeout":  dur(kgo.RebalanceTimeout),
		"ServerSideBalancer": func(v string) error {
			if v == "true" {
				m.opts = append(m.opts, kgo.ServerSideBalancer())
			}
			return nil
		},
		"MetadataMaxAge": func(v string) error {
			m.opts = append(m.opts, kgo.MetadataMaxAge(common.ParseDuration(v)))
			return nil
		},
		"MetadataMinAge": func(v string) error {
			m.opts = append(m.opts, kgo.MetadataMinAge(common.ParseDuration(v)))
			return nil
		},
		"ConsumeResetOffset": func(v string) error {
			o := kgo.NewOffset().AtStart()
			if v == "AtEnd" {
				o = kgo.NewOffset().AtEnd()
			}
			m.opts = append(m.opts, kgo.ConsumeResetOffset(o))
			return nil
		},
		"FetchMaxWait": func(v string) error {
			m.opts = append(m.opts, kgo.FetchMaxWait(common.ParseDuration(v)))
			return nil
		},
		"FetchMinBytes": func(v string) error {
			n, err := strconv.Atoi(v)
			m.opts = append(m.opts, kgo.FetchMinBytes(int32(n)))
			return err
		},
		"FetchMaxBytes": func(v string) error {
			n, err := strconv.Atoi(v)
			m.opts = append(m.opts, kgo.FetchMaxBytes(int32(n)))
			return err
		},
		"FetchMaxPartitionBytes": func(v string) error {
			n, err := strconv.Atoi(v)
			m.opts = append(m.opts, kgo.FetchMaxPartitionBytes(int32(n)))
			return err
		},
		"DialTimeout": func(v string) error {
			m.opts = append(m.opts, kgo.DialTimeout(common.ParseDuration(v)))
			return nil
		},
		"RequestRetries": func(v string) error {
			n, err := strconv.Atoi(v)
			m.opts = append(m.opts, kgo.RequestRetries(n))
			return err
		},
	}
}

// effective reads every option of the table back from the client (Client.OptValue).
func effective(cl *kgo.Client, table common.Table) map[string]any {
	out := map[string]any{}
	for name := range table.Options {
		switch v := cl.OptValue(name).(type) {
		case time.Duration:
			out[name] = v.String()
		case []kgo.GroupBalancer:
			names := []string{}
			for _, b := range v {
				names = append(names, b.ProtocolName())
			}
			out[name] = strings.Join(names, ",")
		case kgo.Offset:
			switch v.String() {
			case kgo.NewOffset().AtStart().String():
				out[name] = "AtStart"
			case kgo.NewOffset().AtEnd().String():
				out[name] = "AtEnd"
			default:
				out[name] = v.String()
			}
		case int32:
			out[name] = int(v)
		default:
			out[name] = v
		}
	}
	return out
}

func errorOf(err error) (string, *int) {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		code := int(ke.Code)
		return ke.Message, &code
	}
	return common.ErrorName(err), nil
}

// allCooperative says whether every balancer is cooperative (the group's protocol then is).
func allCooperative(bs []kgo.GroupBalancer) bool {
	for _, b := range bs {
		if !b.IsCooperative() {
			return false
		}
	}
	return len(bs) > 0
}

// requireConsumerProtocol fails unless the cluster serves ConsumerGroupHeartbeat v1, which kgo's
// ServerSideBalancer needs (see the contract).
func requireConsumerProtocol(cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("ApiVersions for the consumer group protocol: %v", err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == int16(kmsg.ConsumerGroupHeartbeat) && k.MaxVersion >= 1 {
			return nil
		}
	}
	return errors.New("the broker does not serve the consumer group protocol (ConsumerGroupHeartbeat v1); kgo would run the classic protocol instead")
}

// onDone prints each partition's outcome of one commit of offsets.
func (m *member) onDone(offsets map[int]int64) func(*kgo.Client, *kmsg.OffsetCommitRequest, *kmsg.OffsetCommitResponse, error) {
	return func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			name, code := errorOf(err)
			common.Commit(offsets, name, code)
			return
		}
		done := map[int]int64{}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				o, ok := offsets[int(p.Partition)]
				if t.Topic != m.args.Topic || !ok {
					continue
				}
				one := map[int]int64{int(p.Partition): o}
				if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
					name, code := errorOf(e)
					common.Commit(one, name, code)
				} else {
					common.Commit(one, "", nil)
					done[int(p.Partition)] = o
				}
			}
		}
		m.policy.Done(done)
	}
}

func (m *member) uncommitted(offsets map[int]int64) map[string]map[int32]kgo.EpochOffset {
	ps := map[int32]kgo.EpochOffset{}
	for p, o := range offsets {
		ps[int32(p)] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	return map[string]map[int32]kgo.EpochOffset{m.args.Topic: ps}
}

func (m *member) commitSync(ctx context.Context, cl *kgo.Client, offsets map[int]int64) {
	if len(offsets) > 0 {
		cl.CommitOffsetsSync(ctx, m.uncommitted(offsets), m.onDone(offsets))
	}
}

func partitionsOf(topic string, assigned map[string][]int32) []int {
	ps := []int{}
	for _, p := range assigned[topic] {
		ps = append(ps, int(p))
	}
	return common.Sorted(ps)
}

func (m *member) onAssigned(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
	memberID, generation := cl.GroupMetadata()
	common.Out("joined", map[string]any{"generation": generation, "member": memberID})
	common.Out("assigned", map[string]any{"partitions": partitionsOf(m.args.Topic, assigned)})
}

func (m *member) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	ps := partitionsOf(m.args.Topic, revoked)
	if len(ps) == 0 && m.cooperative.Load() {
		return
	}
	m.commitSync(ctx, cl, m.policy.Pending(ps))
	common.Out("revoked", map[string]any{"partitions": ps, "lost": false})
	m.policy.Forget(ps)
}

func (m *member) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	ps := partitionsOf(m.args.Topic, lost)
	if len(ps) == 0 {
		return
	}
	common.Out("revoked", map[string]any{"partitions": ps, "lost": true})
	m.policy.Forget(ps)
}

// manageErrors reports the group management loop's errors (kgo.HookGroupManageError).
type manageErrors struct{}

func (manageErrors) OnGroupManageError(err error) {
	name, code := errorOf(err)
	common.Out("heartbeat_error", map[string]any{"error": name, "code": code})
}

// poll is the member's loop until stop: poll, process, commit by the policy, allow rebalances; on stop
// the last commit is made while the rebalance gate is held (see the contract).
func (m *member) poll(cl *kgo.Client) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for {
		select {
		case <-m.stop:
			cl.PollRecords(canceled, 1) // holds the rebalance gate (after a rebalance under way)
			m.final(cl)
			return
		default:
		}
		if m.gate.Stalled() {
			cl.PollRecords(canceled, 1) // holds the rebalance gate, as an unprocessed poll does
			m.gate.Wait(m.stop)
			if m.stopping() {
				m.final(cl)
				return
			}
			cl.AllowRebalance()
			continue
		}
		ctx, done := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fetches := cl.PollRecords(ctx, 500)
		done()
		if fetches.IsClientClosed() {
			return
		}
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				common.Logf("fetch %s/%d: %v", t, p, err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if m.gate.Stalled() {
				m.gate.Wait(m.stop) // a handler stuck on this record
			}
			var value any
			if r.Value != nil {
				value = string(r.Value)
			}
			common.Out("record", map[string]any{"partition": r.Partition, "offset": r.Offset, "value": value})
			m.policy.Processed(int(r.Partition), r.Offset)
		})
		if m.stopping() {
			m.final(cl) // this poll's records are committed before a rebalance can revoke them
			return
		}
		if m.policy.Due() {
			if offsets := m.policy.Pending(nil); len(offsets) > 0 {
				cl.CommitOffsets(context.Background(), m.uncommitted(offsets), m.onDone(offsets))
			}
		}
		cl.AllowRebalance()
	}
}

func (m *member) stopping() bool {
	select {
	case <-m.stop:
		return true
	default:
		return false
	}
}

// final commits what the policy has pending, synchronously, then allows rebalances: the caller holds
// the rebalance gate, so no revoke runs between the last records processed and this commit.
func (m *member) final(cl *kgo.Client) {
	m.commitSync(context.Background(), cl, m.policy.Pending(nil))
	cl.AllowRebalance()
}

func main() {
	m := &member{gate: common.NewGate(), stop: make(chan struct{})}
	m.args = common.ParseArgs(client)
	table := common.LoadTable(optionsJSON, m.setters())
	if m.args.PrintOptions {
		table.Print()
		return
	}
	policy, opts, err := table.Resolve(m.args.Properties)
	if err != nil {
		common.Fail(client, err.Error())
	}
	setters := m.setters()
	for name, value := range opts {
		if err := setters[name](value); err != nil {
			common.Fail(client, err.Error())
		}
	}
	m.policy = common.NewCommitPolicy(policy)
	m.opts = append(m.opts,
		kgo.SeedBrokers(strings.Split(m.args.Bootstrap, ",")...),
		kgo.ConsumerGroup(m.args.Group),
		kgo.ConsumeTopics(m.args.Topic),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(m.onAssigned),
		kgo.OnPartitionsRevoked(m.onRevoked),
		kgo.OnPartitionsLost(m.onLost),
		kgo.WithHooks(manageErrors{}),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelWarn, nil)),
	)
	if m.args.Name != "" {
		m.opts = append(m.opts, kgo.ClientID(m.args.Name))
	}
	if m.args.GroupInstanceID != "" {
		m.opts = append(m.opts, kgo.InstanceID(m.args.GroupInstanceID))
	}

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go common.ReadCommands(m.gate)
	if !common.Hold(m.args.HoldUntil, sigs) {
		return // stopped while held: no event, exit 0
	}

	common.Out("ready", nil)
	cl, err := kgo.NewClient(m.opts...)
	if err != nil {
		common.Fail(client, fmt.Sprintf("the client refused its options: %v", err))
	}
	bs, _ := cl.OptValue("Balancers").([]kgo.GroupBalancer)
	serverSide, _ := cl.OptValue("ServerSideBalancer").(bool)
	if serverSide {
		if err := requireConsumerProtocol(cl); err != nil {
			common.Fail(client, err.Error())
		}
	}
	m.cooperative.Store(serverSide || allCooperative(bs))
	common.Out("started", map[string]any{"effective": effective(cl, table)})
	polled := make(chan struct{})
	go func() { m.poll(cl); close(polled) }()

	<-sigs
	t0 := time.Now()
	close(m.stop) // ends a stall and the poll loop, which makes the last commit
	<-polled
	cl.Close() // a dynamic member leaves the group (its final revoke runs first)
	common.Out("stopped", map[string]any{"clean": true, "close_ms": float64(time.Since(t0).Microseconds()) / 1000})
}
