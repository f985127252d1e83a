// Command kafkago is a herdlab coordinator member on segmentio/kafka-go: one consumer group member,
// speaking the child protocol of harness/members/child.py.
//
// Why kafka.ConsumerGroup rather than a Reader with a GroupID: the Reader hides what the member must
// record. It keeps the generation and the assignment to itself, retries its commits
// (commitOffsetsWithRetry) or, committing on an interval, only logs their errors. The Reader is built
// on the same ConsumerGroup (NewConsumerGroup, Next, Generation.Start), so the coordinator sees the
// same requests: one generation at a time, whose end waits for every goroutine the generation started.
//
// Contract
//   - Each generation (ConsumerGroup.Next): joined{generation, member}, assigned{partitions}; one
//     reader per assigned partition (ReaderConfig with Partition, started at the generation's offset)
//     and one processing goroutine, all started with Generation.Start. At the generation's end the
//     processor commits what the policy has pending, then prints revoked{partitions, lost:false}
//     (kafka-go does not tell a lost generation from a revoked one).
//   - Commits: Generation.CommitOffsets (OffsetCommit with the generation): one commit line per
//     partition; a rejected commit carries Kafka's error name and code (kafka-go fails the whole
//     request with the first partition's error code).
//   - A ConsumerGroup.Next error (join, sync, offset fetch) is a heartbeat_error line; a failed
//     heartbeat itself only ends the generation in kafka-go and is not reported to the program.
//   - Stall: the processor stops taking records and no longer watches the generation's end, as a stuck
//     record handler would: the heartbeat goroutine goes on, and a rebalance cannot complete for this
//     member (kafka-go waits for every goroutine of the generation) until it is unstalled.
//   - SIGTERM: the pending offsets are committed, ConsumerGroup.Close (the generation ends, the member
//     leaves the group), stopped{clean:true, close_ms}, exit 0. Stopped while held (--hold-until): exit
//     0 with no event.
//   - No static membership and no sticky or cooperative-sticky balancer exist in kafka-go: a
//     --group-instance-id or such an assignor is an error (exit status 2).
package main

import (
	"context"
	_ "embed"
	"errors"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"
	"herdlab.local/member/common"
)

const client = "kafka-go"

//go:embed options.json
var optionsJSON []byte

var balancers = map[string]kafka.GroupBalancer{
	"range":      kafka.RangeGroupBalancer{},
	"roundrobin": kafka.RoundRobinGroupBalancer{},
}

type member struct {
	args   common.Args
	cfg    kafka.ConsumerGroupConfig
	rcfg   kafka.ReaderConfig // the partition readers' settings
	policy *common.CommitPolicy
	gate   *common.Gate
	stop   chan struct{}

	mu  sync.Mutex
	gen *kafka.Generation
}

func (m *member) setters() map[string]func(string) error {
	dur := func(p *time.Duration) func(string) error {
		return func(v string) error { *p = common.ParseDuration(v); return nil }
	}
	integer := func(p *int) func(string) error {
		return func(v string) error { n, err := strconv.Atoi(v); *p = n; return err }
	}
	return map[string]func(string) error{
		"GroupBalancers": func(v string) error {
			m.cfg.GroupBalancers = nil
			for _, name := range strings.Split(v, ",") {
				m.cfg.GroupBalancers = append(m.cfg.GroupBalancers, balancers[strings.TrimSpace(name)])
			}
			return nil
		},
		"HeartbeatInterval":      dur(&m.cfg.HeartbeatInterval),
		"SessionTimeout":         dur(&m.cfg.SessionTimeout),
		"RebalanceTimeout":       dur(&m.cfg.RebalanceTimeout),
		"JoinGroupBackoff":       dur(&m.cfg.JoinGroupBackoff),
		"WatchPartitionChanges":  func(v string) error { m.cfg.WatchPartitionChanges = v == "true"; return nil },
		"PartitionWatchInterval": dur(&m.cfg.PartitionWatchInterval),
		"StartOffset": func(v string) error {
			m.cfg.StartOffset = map[string]int64{"FirstOffset": kafka.FirstOffset, "LastOffset": kafka.LastOffset}[v]
			return nil
		},
		"Timeout":          dur(&m.cfg.Timeout),
		"MinBytes":         integer(&m.rcfg.MinBytes),
		"MaxBytes":         integer(&m.rcfg.MaxBytes),
		"MaxWait":          dur(&m.rcfg.MaxWait),
		"ReadBatchTimeout": dur(&m.rcfg.ReadBatchTimeout),
		"QueueCapacity":    integer(&m.rcfg.QueueCapacity),
		"ReadBackoffMin":   dur(&m.rcfg.ReadBackoffMin),
		"ReadBackoffMax":   dur(&m.rcfg.ReadBackoffMax),
		"MaxAttempts":      integer(&m.rcfg.MaxAttempts),
	}
}

// effective is every option as the client took it: the ConsumerGroupConfig after Validate (which fills
// in kafka-go's defaults) and the partition readers' config after NewReader's defaults.
func (m *member) effective(r kafka.ReaderConfig) map[string]any {
	names := []string{}
	for _, b := range m.cfg.GroupBalancers {
		names = append(names, b.ProtocolName())
	}
	start := map[int64]string{kafka.FirstOffset: "FirstOffset", kafka.LastOffset: "LastOffset"}
	return map[string]any{
		"GroupBalancers":         strings.Join(names, ","),
		"HeartbeatInterval":      m.cfg.HeartbeatInterval.String(),
		"SessionTimeout":         m.cfg.SessionTimeout.String(),
		"RebalanceTimeout":       m.cfg.RebalanceTimeout.String(),
		"JoinGroupBackoff":       m.cfg.JoinGroupBackoff.String(),
		"WatchPartitionChanges":  m.cfg.WatchPartitionChanges,
		"PartitionWatchInterval": m.cfg.PartitionWatchInterval.String(),
		"StartOffset":            start[m.cfg.StartOffset],
		"Timeout":                m.cfg.Timeout.String(),
		"MinBytes":               r.MinBytes,
		"MaxBytes":               r.MaxBytes,
		"MaxWait":                r.MaxWait.String(),
		"ReadBatchTimeout":       r.ReadBatchTimeout.String(),
		"QueueCapacity":          r.QueueCapacity,
		"ReadBackoffMin":         r.ReadBackoffMin.String(),
		"ReadBackoffMax":         r.ReadBackoffMax.String(),
		"MaxAttempts":            r.MaxAttempts,
	}
}

func errorOf(err error) (string, *int) {
	var ke kafka.Error
	if errors.As(err, &ke) {
		code := int(ke)
		if name, ok := kafkaNames[code]; ok {
			return name, &code
		}
		return "UNKNOWN_" + strconv.Itoa(code), &code
	}
	return common.ErrorName(err), nil
}

// commit commits offsets in gen and prints each partition's outcome.
func (m *member) commit(gen *kafka.Generation, offsets map[int]int64) {
	if len(offsets) == 0 {
		return
	}
	err := gen.CommitOffsets(map[string]map[int]int64{m.args.Topic: offsets})
	if err != nil {
		name, code := errorOf(err)
		common.Commit(offsets, name, code)
		return
	}
	common.Commit(offsets, "", nil)
	m.policy.Done(offsets)
}

// fetch reads one partition into records until the generation ends.
func (m *member) fetch(gen *kafka.Generation, p kafka.PartitionAssignment, records chan<- kafka.Message) {
	gen.Start(func(ctx context.Context) {
		rc := m.rcfg
		rc.Brokers, rc.Topic, rc.Partition = m.cfg.Brokers, m.args.Topic, p.ID
		r := kafka.NewReader(rc)
		defer r.Close()
		if err := r.SetOffset(p.Offset); err != nil {
			common.Logf("partition %d: SetOffset(%d): %v", p.ID, p.Offset, err)
			return
		}
		for {
			msg, err := r.FetchMessage(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				common.Logf("partition %d: %v", p.ID, err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
				continue
			}
			select {
			case records <- msg:
			case <-ctx.Done():
				return
			}
		}
	})
}

// process handles the generation's records and commits by the policy (see the contract).
func (m *member) process(gen *kafka.Generation, partitions []int, records <-chan kafka.Message) {
	gen.Start(func(ctx context.Context) {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			if m.gate.Stalled() {
				m.gate.Wait(m.stop) // stuck: the generation's end is not seen until unstalled
			}
			select {
			case <-ctx.Done():
				m.commit(gen, m.policy.Pending(partitions))
				common.Out("revoked", map[string]any{"partitions": partitions, "lost": false})
				m.policy.Forget(partitions)
				return
			case <-m.gate.Changed():
			case msg := <-records:
				var value any
				if msg.Value != nil {
					value = string(msg.Value)
				}
				common.Out("record", map[string]any{"partition": msg.Partition, "offset": msg.Offset, "value": value})
				m.policy.Processed(msg.Partition, msg.Offset)
				if m.policy.Due() {
					m.commit(gen, m.policy.Pending(nil))
				}
			case <-tick.C:
				if m.policy.Due() {
					m.commit(gen, m.policy.Pending(nil))
				}
			}
		}
	})
}

func (m *member) run(cg *kafka.ConsumerGroup) {
	for {
		gen, err := cg.Next(context.Background())
		if errors.Is(err, kafka.ErrGroupClosed) {
			return
		}
		if err != nil {
			name, code := errorOf(err)
			common.Out("heartbeat_error", map[string]any{"error": name, "code": code})
			continue
		}
		partitions := []int{}
		for _, p := range gen.Assignments[m.args.Topic] {
			partitions = append(partitions, p.ID)
		}
		partitions = common.Sorted(partitions)
		common.Out("joined", map[string]any{"generation": gen.ID, "member": gen.MemberID})
		common.Out("assigned", map[string]any{"partitions": partitions})
		m.mu.Lock()
		m.gen = gen
		m.mu.Unlock()
		records := make(chan kafka.Message)
		for _, p := range gen.Assignments[m.args.Topic] {
			m.fetch(gen, p, records)
		}
		m.process(gen, partitions, records)
	}
}

func main() {
	m := &member{gate: common.NewGate(), stop: make(chan struct{})}
	m.args = common.ParseArgs(client)
	table := common.LoadTable(optionsJSON, m.setters())
	if m.args.PrintOptions {
		table.Print()
		return
	}
	if m.args.GroupInstanceID != "" {
		common.Fail(client, "kafka-go has no static membership (group.instance.id)")
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
	m.cfg.ID = m.args.Group
	m.cfg.Brokers = strings.Split(m.args.Bootstrap, ",")
	m.cfg.Topics = []string{m.args.Topic}
	dialer := *kafka.DefaultDialer
	if m.args.Name != "" {
		dialer.ClientID = m.args.Name // client.id, as herdlab's other members set it
	}
	m.cfg.Dialer, m.rcfg.Dialer = &dialer, &dialer
	m.cfg.ErrorLogger = kafka.LoggerFunc(func(f string, a ...any) { common.Logf(f, a...) })
	if err := m.cfg.Validate(); err != nil {
		common.Fail(client, err.Error())
	}
	reader := kafka.NewReader(kafka.ReaderConfig{
		Brokers: m.cfg.Brokers, Topic: m.args.Topic, Dialer: m.rcfg.Dialer, MinBytes: m.rcfg.MinBytes, MaxBytes: m.rcfg.MaxBytes,
		MaxWait: m.rcfg.MaxWait, ReadBatchTimeout: m.rcfg.ReadBatchTimeout, QueueCapacity: m.rcfg.QueueCapacity,
		ReadBackoffMin: m.rcfg.ReadBackoffMin, ReadBackoffMax: m.rcfg.ReadBackoffMax, MaxAttempts: m.rcfg.MaxAttempts,
	})
	readerCfg := reader.Config() // the partition readers' settings with kafka-go's defaults
	_ = reader.Close()

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go common.ReadCommands(m.gate)
	if !common.Hold(m.args.HoldUntil, sigs) {
		return // stopped while held: no event, exit 0
	}

	common.Out("ready", nil)
	cg, err := kafka.NewConsumerGroup(m.cfg)
	if err != nil {
		common.Fail(client, err.Error())
	}
	common.Out("started", map[string]any{"effective": m.effective(readerCfg)})
	done := make(chan struct{})
	go func() { m.run(cg); close(done) }()

	<-sigs
	t0 := time.Now()
	close(m.stop) // ends a stall
	m.mu.Lock()
	gen := m.gen
	m.mu.Unlock()
	if gen != nil {
		m.commit(gen, m.policy.Pending(nil))
	}
	_ = cg.Close() // ends the generation (its processor commits and revokes) and leaves the group
	<-done
	common.Out("stopped", map[string]any{"clean": true, "close_ms": float64(time.Since(t0).Microseconds()) / 1000})
}
