// Command kafkago is a herdlab coordinator member on segmentio/kafka-go: one consumer group member,
// speaking the child protocol of harness/members/child.py.
//
// It runs a kafka.ConsumerGroup as kafka-go's Reader with a GroupID does (reader.go: run, subscribe,
// commitLoop, unsubscribe), written out here because the Reader hides what the member must record: the
// generation id and member id, and its commits' errors (it retries them, commitOffsetsWithRetry, or on
// an interval only logs them).
//
// The same as the Reader
//   - One generation at a time (ConsumerGroup.Next). kafka-go starts the generation's heartbeat (and
//     with WatchPartitionChanges its partition watcher); the heartbeat returns at its first error,
//     which ends the generation. The program adds one commit goroutine (the Reader's commitLoop) and
//     one fetcher per assigned partition (a ReaderConfig with that Partition, started at the
//     generation's offset: the Reader's partition readers, which its unsubscribe goroutine stops at
//     the generation's end). All of them are the generation's (Generation.Start) and select on its
//     ctx, so the generation ends as soon as they return and the next one is joined at once.
//   - The record handler (the processor) runs on its own goroutine outside every generation, as a
//     Reader user's loop over FetchMessage does: a stuck handler does not hold the generation's end,
//     and the member rejoins and keeps its membership while it is stuck.
//   - The commit goroutine commits, with its generation (Generation.CommitOffsets), what the processor
//     has processed, and once more when the generation's ctx ends (the Reader's final commit in
//     commitLoopInterval).
//
// Where it differs from the Reader
//   - The commit policy is the member's (harness/members/recorder.py: interval commits), not
//     ReaderConfig.CommitInterval or CommitMessages; a commit is not retried: its outcome is printed.
//   - Records reach the processor through an unbuffered channel (the Reader's is QueueCapacity long),
//     each tagged with its generation; the processor drops a record whose generation has ended (the
//     Reader drops only those older than the newest generation it subscribed to, and commits what its
//     user processed late with the next generation), so no record is processed after its generation's
//     final commit and revoked line.
//   - The fetchers are the generation's own goroutines rather than stopped by one of them; the
//     generation ends alike (each selects on its ctx).

// Contract
//   - Each generation: joined{generation, member}, assigned{partitions}; when it ends, after the final
//     commit, revoked{partitions, lost:false} (kafka-go does not tell a lost generation from a revoked
//     one).
//   - Commits: one commit line per partition; a rejected commit carries Kafka's error name and code
//     (kafka-go fails the whole request with the first partition's error code); an error without a code
//     its Go type (common.ErrorName).
//   - A ConsumerGroup.Next error (join, sync, offset fetch) is a heartbeat_error line; a failed
//     heartbeat only ends the generation in kafka-go and is not reported to the program.
//   - Stall: the processor stops taking records, as a stuck record handler would. The generation's
//     goroutines go on: the heartbeat until the group rebalances (its error ends the generation), the
//     fetchers blocked on handing over a record, the commit goroutine (nothing new to commit). A
//     rebalance completes without waiting for the processor: the generation's final commit, revoked,
//     and the member joins the next generation at once, still stalled; kafka-go has no poll timer, so
//     a stall alone never removes the member.
//   - SIGTERM: the processor stops, ConsumerGroup.Close ends the generation (its commit goroutine makes
//     the final commit and prints revoked) and leaves the group, stopped{clean:true, close_ms}, exit 0.
//     Stopped while held (--hold-until): exit 0 with no event.
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
	args    common.Args
	cfg     kafka.ConsumerGroupConfig
	rcfg    kafka.ReaderConfig // the partition readers' settings
	policy  *common.CommitPolicy
	gate    *common.Gate
	stop    chan struct{}
	records chan delivery // fetchers -> processor

	mu   sync.Mutex
	live *kafka.Generation // the generation whose records the processor takes; nil once it ended
}

// delivery is one fetched record and the generation that fetched it.
type delivery struct {
	gen *kafka.Generation
	msg kafka.Message
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

// fetch reads one partition of gen and hands its records to the processor until the generation ends.
func (m *member) fetch(gen *kafka.Generation, p kafka.PartitionAssignment) {
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
			case m.records <- delivery{gen, msg}:
			case <-ctx.Done():
				return
			}
		}
	})
}

// commits is gen's commit goroutine: interval commits of what was processed in gen's partitions, and
// when the generation ends the final commit, then revoked (see the contract).
func (m *member) commits(gen *kafka.Generation, partitions []int) {
	gen.Start(func(ctx context.Context) {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				m.mu.Lock()
				if m.live == gen {
					m.live = nil // from here on the processor drops this generation's records
				}
				m.mu.Unlock()
				m.commit(gen, m.policy.Pending(partitions))
				common.Out("revoked", map[string]any{"partitions": partitions, "lost": false})
				m.policy.Forget(partitions)
				return
			case <-tick.C:
				if m.policy.Due() {
					m.commit(gen, m.policy.Pending(partitions))
				}
			}
		}
	})
}

// process is the record handler, outside every generation, until stop: it takes records unless stalled.
func (m *member) process() {
	for {
		if m.gate.Stalled() {
			m.gate.Wait(m.stop) // stuck, as a slow handler is; the generations go on without it
		}
		select {
		case <-m.stop:
			return
		case <-m.gate.Changed():
		case d := <-m.records:
			m.mu.Lock()
			if d.gen == m.live {
				var value any
				if d.msg.Value != nil {
					value = string(d.msg.Value)
				}
				common.Out("record", map[string]any{"partition": d.msg.Partition, "offset": d.msg.Offset, "value": value})
				m.policy.Processed(d.msg.Partition, d.msg.Offset)
			}
			m.mu.Unlock()
		}
	}
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
		m.live = gen
		m.mu.Unlock()
		m.commits(gen, partitions)
		for _, p := range gen.Assignments[m.args.Topic] {
			m.fetch(gen, p)
		}
	}
}

func main() {
	m := &member{gate: common.NewGate(), stop: make(chan struct{}), records: make(chan delivery)}
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
	processed := make(chan struct{})
	go func() { m.process(); close(processed) }()
	done := make(chan struct{})
	go func() { m.run(cg); close(done) }()

	<-sigs
	t0 := time.Now()
	close(m.stop) // ends a stall and the processor
	<-processed
	_ = cg.Close() // ends the generation (its commit goroutine commits and revokes) and leaves the group
	<-done
	common.Out("stopped", map[string]any{"clean": true, "close_ms": float64(time.Since(t0).Microseconds()) / 1000})
}
