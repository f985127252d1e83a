// Package common is what herdlab's Go member programs share: the child protocol of
// harness/members/child.py (command line, JSON lines on stdout, commands on stdin), the option table
// (options.json beside each program, embedded in it and read by herdlab's Python side), and the
// member's own commit policy (harness/members/recorder.py CommitPolicy).
//
// Contract
//   - Args: --bootstrap, --group, --topic, --name, [--group-instance-id], -X NAME=VALUE (repeatable),
//     [--hold-until FILE]; --options prints the option table (JSON) and exits 0.
//   - Out writes one JSON object per line on stdout, each flushed at once, under one lock; logs go to
//     stderr.
//   - ReadCommands reads stdin: {"cmd":"stall"} / {"cmd":"unstall"} switch the Gate; an unknown
//     line is one stderr line, ignored; end of file exits the process at once (no commit, no leave).
//   - Hold (--hold-until) returns false when the member is stopped (SIGTERM, SIGINT) while held: the
//     program then exits 0 having printed no event. The caller installs its signal handler before it.
//   - ErrorName: an error without a Kafka error code is recorded by its Go type, its message logged.
//   - Resolve turns the -X properties into the member's commit policy and the client's options by its
//     own names: Kafka's dotted names of the table's "kafka" section are mapped to their option first,
//     then the client's own names over them; any other name is an error naming it and the client.
package common

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Args is the child's command line (harness/members/clients/registry.py child_argv).
type Args struct {
	Bootstrap       string
	Group           string
	Topic           string
	Name            string
	GroupInstanceID string
	Properties      [][2]string
	HoldUntil       string
	PrintOptions    bool
}

// ParseArgs parses os.Args; a bad command line is one stderr line and exit status 2.
func ParseArgs(client string) Args {
	var a Args
	fs := flag.NewFlagSet(client, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.Bootstrap, "bootstrap", "", "")
	fs.StringVar(&a.Group, "group", "", "")
	fs.StringVar(&a.Topic, "topic", "", "")
	fs.StringVar(&a.Name, "name", "", "")
	fs.StringVar(&a.GroupInstanceID, "group-instance-id", "", "")
	fs.StringVar(&a.HoldUntil, "hold-until", "", "")
	fs.BoolVar(&a.PrintOptions, "options", false, "")
	fs.Func("X", "", func(s string) error {
		name, value, ok := strings.Cut(s, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return fmt.Errorf("-X: expected NAME=VALUE, got %q", s)
		}
		a.Properties = append(a.Properties, [2]string{strings.TrimSpace(name), strings.TrimSpace(value)})
		return nil
	})
	if err := fs.Parse(os.Args[1:]); err != nil {
		Fail(client, err.Error())
	}
	if !a.PrintOptions && (a.Bootstrap == "" || a.Group == "" || a.Topic == "") {
		Fail(client, "--bootstrap, --group and --topic are required")
	}
	return a
}

// Fail prints one line on stderr and exits with status 2 (a user error).
func Fail(client, msg string) {
	fmt.Fprintf(os.Stderr, "%s member: error: %s\n", client, msg)
	os.Exit(2)
}

var outMu sync.Mutex

// Out prints one event line: {"kind": kind, ...fields}.
func Out(kind string, fields map[string]any) {
	m := map[string]any{"kind": kind}
	for k, v := range fields {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}

// Logf writes one log line on stderr.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().UTC().Format("15:04:05.000")+" "+format+"\n", args...)
}

// Hold waits until path exists, then removes it and returns true (harness/members/release.py); it
// returns false at once when a signal arrives on stop first (the member was stopped while held: the
// caller exits 0 without printing an event). No path: true at once.
func Hold(path string, stop <-chan os.Signal) bool {
	if path == "" {
		return true
	}
	Logf("held until %s exists", path)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			break
		}
		select {
		case sig := <-stop:
			Logf("stopped while held (%v)", sig)
			return false
		case <-tick.C:
		}
	}
	_ = os.Remove(path)
	return true
}

// ErrorName is the name an event records for an error that carries no Kafka error code: its Go type
// (as the Java and Python members record an exception's class name), e.g. "net.OpError"; the message
// goes to the log (stderr) only.
func ErrorName(err error) string {
	name := strings.TrimPrefix(fmt.Sprintf("%T", err), "*")
	Logf("%s: %v", name, err)
	return name
}

// Gate is the stall switch: while stalled the member does not poll (its processing is stuck).
type Gate struct {
	mu      sync.Mutex
	stalled bool
	changed chan struct{}
}

// NewGate returns an open gate.
func NewGate() *Gate { return &Gate{changed: make(chan struct{})} }

// Set stalls (true) or unstalls (false) the member.
func (g *Gate) Set(stalled bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stalled == stalled {
		return
	}
	g.stalled = stalled
	close(g.changed)
	g.changed = make(chan struct{})
}

// Stalled says whether the member is stalled now.
func (g *Gate) Stalled() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stalled
}

// Wait blocks while the member is stalled, until it is unstalled or stop is closed.
func (g *Gate) Wait(stop <-chan struct{}) {
	for {
		g.mu.Lock()
		stalled, changed := g.stalled, g.changed
		g.mu.Unlock()
		if !stalled {
			return
		}
		select {
		case <-stop:
			return
		case <-changed:
		}
	}
}

// ReadCommands reads the adapter's commands from stdin until end of file, which exits the process.
func ReadCommands(gate *Gate) {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var cmd struct {
			Cmd string `json:"cmd"`
		}
		err := json.Unmarshal([]byte(line), &cmd)
		switch {
		case err == nil && cmd.Cmd == "stall":
			Logf("stalled: not polling until unstalled")
			gate.Set(true)
		case err == nil && cmd.Cmd == "unstall":
			Logf("unstalled")
			gate.Set(false)
		default:
			Logf("ignoring an unknown command on stdin: %.200s", line)
		}
	}
	os.Exit(0) // the adapter is gone: exit at once, no commit, no leave
}

// Option is one entry of a client's option table.
type Option struct {
	Type    string   `json:"type"` // duration | int | bool | balancers | enum
	Default any      `json:"default"`
	Values  []string `json:"values,omitempty"` // balancers, enum: the accepted values
	Doc     string   `json:"doc"`
}

// KafkaName maps one of Kafka's dotted names to the client's option.
type KafkaName struct {
	Option string            `json:"option"`
	Unit   string            `json:"unit,omitempty"`   // "ms": an integer of milliseconds, as a duration
	Values map[string]string `json:"values,omitempty"` // Kafka's value -> the option's value
}

// Table is a client's options.json.
type Table struct {
	Client  string               `json:"client"`
	Options map[string]Option    `json:"options"`
	Kafka   map[string]KafkaName `json:"kafka"`
	Policy  []string             `json:"policy"` // Kafka's names the member carries out itself
	Harness []string             `json:"harness"`
}

// LoadTable parses an embedded options.json and checks that setters has exactly its options.
func LoadTable(raw []byte, setters map[string]func(string) error) Table {
	var t Table
	if err := json.Unmarshal(raw, &t); err != nil {
		panic(fmt.Sprintf("options.json: %v", err))
	}
	for name := range t.Options {
		if _, ok := setters[name]; !ok {
			panic(fmt.Sprintf("options.json names %s, which the program does not set", name))
		}
	}
	for name := range setters {
		if _, ok := t.Options[name]; !ok {
			panic(fmt.Sprintf("the program sets %s, which options.json does not name", name))
		}
	}
	return t
}

// Print writes the table as JSON on stdout.
func (t Table) Print() {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		panic(err)
	}
	os.Stdout.Write(append(b, '\n'))
}

// Policy is the member's commit policy as the properties set it.
type Policy struct {
	Enabled  bool
	Interval time.Duration
}

var goDuration = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$|^0$`)

// CheckValue checks value against the option's type.
func (o Option) CheckValue(value string) error {
	switch o.Type {
	case "duration":
		if !goDuration.MatchString(value) {
			return fmt.Errorf("expected a Go duration such as 10s or 500ms")
		}
	case "int":
		if _, err := strconv.Atoi(value); err != nil {
			return fmt.Errorf("expected an integer")
		}
	case "bool":
		if value != "true" && value != "false" {
			return fmt.Errorf("expected true or false")
		}
	case "balancers", "enum":
		parts := []string{value}
		if o.Type == "balancers" {
			parts = strings.Split(value, ",")
		}
		for _, p := range parts {
			if !contains(o.Values, strings.TrimSpace(p)) {
				return fmt.Errorf("%q is not one of %s", strings.TrimSpace(p), strings.Join(o.Values, ", "))
			}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Resolve maps the -X properties (see the package contract): the commit policy, and the client's own
// options (name -> value) in the table's order of names.
func (t Table) Resolve(props [][2]string) (Policy, map[string]string, error) {
	policy := Policy{Enabled: true, Interval: 5 * time.Second}
	mapped := map[string]string{}
	own := map[string]string{}
	for _, p := range props {
		name, value := p[0], p[1]
		bad := func(err error) error {
			return fmt.Errorf("%s property %q: bad value %q (%v)", t.Client, name, value, err)
		}
		switch {
		case contains(t.Harness, name):
			return policy, nil, fmt.Errorf("property %q is set by the harness for every member", name)
		case name == "enable.auto.commit":
			if value != "true" && value != "false" {
				return policy, nil, bad(errors.New("expected true or false"))
			}
			policy.Enabled = value == "true"
		case name == "auto.commit.interval.ms":
			ms, err := strconv.Atoi(value)
			if err != nil {
				return policy, nil, bad(errors.New("expected an integer"))
			}
			policy.Interval = time.Duration(ms) * time.Millisecond
		case t.Kafka[name].Option != "":
			k := t.Kafka[name]
			v := value
			switch {
			case k.Unit == "ms":
				ms, err := strconv.Atoi(value)
				if err != nil {
					return policy, nil, bad(errors.New("expected an integer"))
				}
				v = (time.Duration(ms) * time.Millisecond).String()
			case k.Values != nil:
				var ok bool
				if v, ok = k.Values[value]; !ok {
					return policy, nil, bad(fmt.Errorf("expected one of %s", strings.Join(sortedKeys(k.Values), ", ")))
				}
			}
			if err := t.Options[k.Option].CheckValue(v); err != nil {
				return policy, nil, bad(err)
			}
			mapped[k.Option] = v
		default:
			o, ok := t.Options[name]
			if !ok {
				return policy, nil, fmt.Errorf("unknown %s option %q", t.Client, name)
			}
			if err := o.CheckValue(value); err != nil {
				return policy, nil, bad(err)
			}
			own[name] = value
		}
	}
	for k, v := range own { // the client's own names over Kafka's
		mapped[k] = v
	}
	return policy, mapped, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ParseDuration parses a value CheckValue accepted as a duration.
func ParseDuration(v string) time.Duration {
	d, err := time.ParseDuration(v)
	if err != nil {
		panic(err)
	}
	return d
}

// CommitPolicy is harness/members/recorder.py CommitPolicy: interval commits of what was processed
// (the next offset to read, per partition), only what is not yet committed at that position.
type CommitPolicy struct {
	mu        sync.Mutex
	interval  time.Duration
	enabled   bool
	next      time.Time
	position  map[int]int64
	committed map[int]int64
}

// NewCommitPolicy starts a policy now.
func NewCommitPolicy(p Policy) *CommitPolicy {
	return &CommitPolicy{
		interval: p.Interval, enabled: p.Enabled, next: time.Now().Add(p.Interval),
		position: map[int]int64{}, committed: map[int]int64{},
	}
}

// Processed notes a processed record.
func (c *CommitPolicy) Processed(partition int, offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if offset+1 > c.position[partition] {
		c.position[partition] = offset + 1
	}
}

// Due says whether an interval commit is due now (and schedules the next one).
func (c *CommitPolicy) Due() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if !c.enabled || now.Before(c.next) {
		return false
	}
	c.next = now.Add(c.interval)
	return true
}

// Pending gives the offsets to commit for partitions (all processed ones when nil).
func (c *CommitPolicy) Pending(partitions []int) map[int]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int]int64{}
	if !c.enabled {
		return out
	}
	for p, o := range c.position {
		if partitions != nil && !containsInt(partitions, p) {
			continue
		}
		if c, ok := c.committed[p]; !ok || c != o {
			out[p] = o
		}
	}
	return out
}

// Done records accepted commits.
func (c *CommitPolicy) Done(offsets map[int]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, o := range offsets {
		c.committed[p] = o
	}
}

// Forget drops revoked partitions.
func (c *CommitPolicy) Forget(partitions []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range partitions {
		delete(c.position, p)
		delete(c.committed, p)
	}
}

func containsInt(list []int, x int) bool {
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

// Sorted returns the partitions in order.
func Sorted(ps []int) []int {
	out := append([]int{}, ps...)
	sort.Ints(out)
	return out
}

// Commit prints one commit line per partition, in partition order: error "" is accepted.
func Commit(offsets map[int]int64, errName string, code *int) {
	ps := make([]int, 0, len(offsets))
	for p := range offsets {
		ps = append(ps, p)
	}
	sort.Ints(ps)
	for _, p := range ps {
		f := map[string]any{"partition": p, "offset": offsets[p], "error": nil, "code": nil}
		if errName != "" {
			f["error"] = errName
			if code != nil {
				f["code"] = *code
			}
		}
		Out("commit", f)
	}
}

// Changed is closed at the next Set that changes the gate.
func (g *Gate) Changed() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.changed
}
