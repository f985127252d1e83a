import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetCommitCallback;
import org.apache.kafka.clients.consumer.RetriableCommitFailedException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * herdlab's member on Kafka's own Java consumer: one {@link KafkaConsumer} in a group, printing what the
 * client reports as the JSON lines of harness/members/child.py (the coordinator kind).
 *
 * <p>Command line: {@code --bootstrap B --group G --topic T --name N [--group-instance-id I]
 * [-X name=value]... [--hold-until FILE] [--poll-ms N]}; or {@code --config-names}: print the client's
 * consumer property names as a JSON array and exit. A property name the client does not know, or a bad
 * argument: one line on stderr, exit status 2.
 *
 * <p>A host: {@code --member NAME[=INSTANCE_ID]} repeated instead of --name and --group-instance-id runs
 * that many members in this JVM, each its own KafkaConsumer on its own thread (only that thread touches
 * it; wakeup() is the one call from another), each line carrying "m": the member's slot (its position
 * among the --member options). A signal stops every member; the exit status is the worst of theirs.
 *
 * <p>Configuration: the -X properties by Kafka's dotted names, then the harness's own over them:
 * bootstrap.servers, group.id, client.id (the member's name), group.instance.id (static members),
 * byte-array deserializers and enable.auto.commit=false. enable.auto.commit and auto.commit.interval.ms
 * are the member's own commit policy: interval commits of what was processed (commitAsync, outcome from
 * its callback), commitSync of the revoked partitions in onPartitionsRevoked and of everything on a
 * clean stop. partition.assignment.strategy may name assignors as Kafka does elsewhere (range,
 * roundrobin, sticky, cooperative-sticky); they become the client's classes.
 *
 * <p>Lines, in the client's order: ready (after the hold), started{effective} (the consumer exists;
 * effective: each given property as the client parses it), joined{generation,member} then
 * assigned{partitions} from onPartitionsAssigned (generation and member id from groupMetadata(), the
 * member epoch under the consumer group protocol), revoked{partitions,lost} from onPartitionsRevoked
 * (after its commit) and onPartitionsLost (no commit), record per processed record,
 * commit{partition,offset,error,code} per partition of every commit attempt (error: Kafka's error name
 * via Errors.forException, else the exception's simple class name with a null code),
 * heartbeat_error{error,code} for a fenced static member (FencedInstanceIdException, after which the
 * member stops uncleanly and exits 1), stopped{clean,close_ms}.
 *
 * <p>Control: SIGTERM or SIGINT stops cleanly (commit, close: a dynamic member leaves; exit 0), also
 * during a stall; before the release of a hold (--hold-until) it ends the program at once, exit status 0,
 * having printed nothing (a held member stopped before its join never began). stdin carries commands,
 * one JSON object per line (with "m": for that slot only, else for every member): {"cmd":"stall"} stops
 * polling (the client's heartbeat thread goes on, so only the poll timer max.poll.interval.ms can remove
 * the member), {"cmd":"unstall"} polls again; an unknown command is one stderr line. stdin at end of file
 * (the adapter is gone): halt at once, no commit, no leave.
 */
public final class HerdlabMember {
    private static final String P = "HerdlabMember";
    private static final Pattern CMD = Pattern.compile("\"cmd\"\\s*:\\s*\"([^\"]*)\"");
    private static final Pattern SLOT = Pattern.compile("\"m\"\\s*:\\s*(\\d+)");
    private static final Map<String, String> ASSIGNORS = Map.of(
            "range", "org.apache.kafka.clients.consumer.RangeAssignor",
            "roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor",
            "sticky", "org.apache.kafka.clients.consumer.StickyAssignor",
            "cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
    /** Carried out by the member itself, not given to the client. */
    private static final Set<String> POLICY = Set.of("enable.auto.commit", "auto.commit.interval.ms");

    /** A stop was asked (SIGTERM or SIGINT): a hold ends at once, every member is told. */
    private static volatile boolean stopAsked;
    /** The members a stop is for, once made (the signal thread reads it). */
    private static final List<Member> MEMBERS = new CopyOnWriteArrayList<>();

    private HerdlabMember() {
    }

    // -- output ---------------------------------------------------------------------------------------

    /** Print one line: {"kind":kind, "m":slot (a hosted member's only), then the fields (already JSON,
     * each "name":value)}. */
    static void line(Integer slot, String kind, String... fields) {
        StringBuilder b = new StringBuilder(64).append("{\"kind\":").append(HerdlabIo.str(kind));
        if (slot != null) {
            b.append(",\"m\":").append(slot);
        }
        for (String f : fields) {
            b.append(',').append(f);
        }
        b.append('}');
        HerdlabIo.emit(b);
    }

    static String field(String name, Object value) {
        return HerdlabIo.str(name) + ":" + HerdlabIo.json(value);
    }

    static void fail(String message) {
        HerdlabIo.fail(P, message);
    }

    // -- commit outcomes ------------------------------------------------------------------------------

    /** Kafka's error name and code of a commit's exception (a retriable failure, or a future's wrapper:
     * of its cause), or, when it is no error of Kafka's protocol, the exception's simple class name (as
     * the Python members' type(e).__name__) and null. */
    static Object[] errorOf(Exception e) {
        Throwable t = e;
        while ((t instanceof RetriableCommitFailedException || t instanceof CompletionException
                || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        Errors err = Errors.forException(t);
        if (err == Errors.UNKNOWN_SERVER_ERROR && !(t instanceof UnknownServerException)) {
            String name = t.getClass().getSimpleName();
            return new Object[] {name.isEmpty() ? t.getClass().getName() : name, null};
        }
        return new Object[] {err.name(), (int) err.code()};
    }

    // -- one member -----------------------------------------------------------------------------------

    /** The member's own commit policy: what it processed, what was committed (see the class contract). */
    static final class Policy {
        final boolean enabled;
        final long intervalNs;
        long next;
        final Map<Integer, Long> position = new TreeMap<>();
        final Map<Integer, Long> committed = new TreeMap<>();

        Policy(boolean enabled, long intervalMs) {
            this.enabled = enabled;
            this.intervalNs = intervalMs * 1_000_000L;
            this.next = System.nanoTime() + intervalNs;
        }

        void processed(int partition, long offset) {
            position.merge(partition, offset + 1, Math::max);
        }

        boolean due() {
            long now = System.nanoTime();
            if (!enabled || now - next < 0) {
                return false;
            }
            next = now + intervalNs;
            return true;
        }

        /** Offsets to commit (next offset to read) of ``partitions`` (all when null) not committed yet. */
        Map<Integer, Long> pending(Collection<Integer> partitions) {
            Map<Integer, Long> out = new TreeMap<>();
            if (!enabled) {
                return out;
            }
            for (Map.Entry<Integer, Long> e : position.entrySet()) {
                if ((partitions == null || partitions.contains(e.getKey()))
                        && !e.getValue().equals(committed.get(e.getKey()))) {
                    out.put(e.getKey(), e.getValue());
                }
            }
            return out;
        }

        /** An accepted commit of ``offsets``: marked committed (never lowered by a late result) for the
         * partitions the member still owns (in ``position``). An asynchronous commit's result may come
         * after its partitions were revoked and forgotten; marking them then would skip a commit once the
         * member owns them again. */
        void done(Map<Integer, Long> offsets) {
            offsets.forEach((p, o) -> {
                if (position.containsKey(p)) {
                    committed.merge(p, o, Math::max);
                }
            });
        }

        void forget(Collection<Integer> partitions) {
            for (Integer p : partitions) {
                position.remove(p);
                committed.remove(p);
            }
        }
    }

    static final class Member implements ConsumerRebalanceListener {
        /** the member's slot in a host (its lines carry it as "m"); null: the process's only member */
        final Integer slot;
        final String topic;
        final Properties props;
        final Policy policy;
        final long pollMs;
        /** set once by the member's thread; read by a signal handler's (stop) */
        volatile KafkaConsumer<byte[], byte[]> consumer;
        volatile boolean stopping;
        private boolean stalled;
        private final Object stall = new Object();

        Member(Integer slot, String topic, Properties props, Policy policy, long pollMs) {
            this.slot = slot;
            this.topic = topic;
            this.props = props;
            this.policy = policy;
            this.pollMs = pollMs;
        }

        void emit(String kind, String... fields) {
            line(slot, kind, fields);
        }

        /** Stop polling (true) or poll again (false); any thread. */
        void stall(boolean on) {
            synchronized (stall) {
                stalled = on;
                stall.notifyAll();
            }
        }

        /** Ask the member to stop cleanly; any thread (a signal handler's). */
        void stop() {
            stopping = true;
            stall(false);
            KafkaConsumer<byte[], byte[]> c = consumer;
            if (c != null) {
                c.wakeup();
            }
        }

        private void awaitUnstall() throws InterruptedException {
            synchronized (stall) {
                while (stalled && !stopping) {
                    stall.wait();
                }
            }
        }

        Map<TopicPartition, OffsetAndMetadata> offsets(Map<Integer, Long> pending) {
            Map<TopicPartition, OffsetAndMetadata> out = new TreeMap<>((a, b) -> a.partition() - b.partition());
            pending.forEach((p, o) -> out.put(new TopicPartition(topic, p), new OffsetAndMetadata(o)));
            return out;
        }

        /** One commit attempt's outcome, one line per partition; the policy told of an accepted one. */
        void outcome(Map<Integer, Long> pending, Exception error) {
            Object[] err = error == null ? new Object[] {null, null} : errorOf(error);
            pending.forEach((p, o) -> emit("commit", field("partition", p), field("offset", o),
                    field("error", err[0]), field("code", err[1])));
            if (error == null) {
                policy.done(pending);
            }
            if (error instanceof FencedInstanceIdException) {
                throw (FencedInstanceIdException) error;
            }
        }

        /** commitSync of ``pending`` (nothing when empty), its outcome printed. A wakeup meant for the
         * poll loop is taken here (the stop flag stays set) and the commit tried again. */
        void commitSync(Map<Integer, Long> pending) {
            if (pending.isEmpty()) {
                return;
            }
            Exception error = null;
            for (int attempt = 0; attempt < 2; attempt++) {
                try {
                    consumer.commitSync(offsets(pending));
                    error = null;
                    break;
                } catch (WakeupException e) {
                    error = e;
                } catch (FencedInstanceIdException e) {
                    error = e;
                    break;
                } catch (RuntimeException e) {
                    error = e;
                    break;
                }
            }
            outcome(pending, error);
        }

        static List<Integer> partitions(Collection<TopicPartition> tps) {
            List<Integer> out = new ArrayList<>(new TreeSet<Integer>(
                    tps.stream().map(TopicPartition::partition).toList()));
            return out;
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> tps) {
            List<Integer> ps = partitions(tps);
            commitSync(policy.pending(ps));
            emit("revoked", field("partitions", ps), field("lost", false));
            policy.forget(ps);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> tps) {
            List<Integer> ps = partitions(tps);
            emit("revoked", field("partitions", ps), field("lost", true));
            policy.forget(ps);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> tps) {
            ConsumerGroupMetadata gm = consumer.groupMetadata();
            emit("joined", field("generation", gm.generationId()), field("member", gm.memberId()));
            emit("assigned", field("partitions", partitions(tps)));
        }

        /** Join and consume until stopped; the member's exit status (0: a clean stop). */
        int run(Map<String, String> given) {
            emit("ready");
            try {
                consumer = new KafkaConsumer<>(props);
            } catch (RuntimeException e) { // e.g. no resolvable bootstrap address
                System.err.println("HerdlabMember: the client could not be made: " + e);
                emit("stopped", field("clean", false));
                return 1;
            }
            if (stopping) {
                consumer.wakeup();
            }
            Map<String, ?> parsed = new ConsumerConfig(props).values();
            StringBuilder eff = new StringBuilder("{");
            for (String name : given.keySet()) {
                if (POLICY.contains(name)) {
                    continue;
                }
                Object v = parsed.get(name);
                if (v instanceof org.apache.kafka.common.config.types.Password) {
                    v = "[hidden]";
                }
                eff.append(eff.length() > 1 ? "," : "").append(field(name, v));
            }
            emit("started", "\"effective\":" + eff.append('}'));
            try {
                consumer.subscribe(List.of(topic), this);
                while (!stopping) {
                    awaitUnstall();
                    if (stopping) {
                        break;
                    }
                    ConsumerRecords<byte[], byte[]> records;
                    try {
                        records = consumer.poll(Duration.ofMillis(pollMs));
                    } catch (WakeupException e) {
                        continue; // a stop: the loop's condition ends it
                    }
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        byte[] value = r.value();
                        emit("record", field("partition", r.partition()), field("offset", r.offset()),
                                field("value", value == null ? null : new String(value, StandardCharsets.UTF_8)));
                        policy.processed(r.partition(), r.offset());
                    }
                    if (policy.due()) {
                        Map<Integer, Long> pending = policy.pending(null);
                        if (!pending.isEmpty()) {
                            OffsetCommitCallback callback = (offsets, error) -> outcome(pending, error);
                            consumer.commitAsync(offsets(pending), callback);
                        }
                    }
                }
                long t0 = System.nanoTime();
                commitSync(policy.pending(null));
                consumer.close(Duration.ofSeconds(30));
                double closeMs = (System.nanoTime() - t0) / 1e6;
                emit("stopped", field("clean", true), field("close_ms", closeMs));
                return 0;
            } catch (RuntimeException e) {
                // a static member whose group.instance.id another member took over: fatal for this one
                // (from a rebalance callback it comes wrapped in the client's KafkaException)
                FencedInstanceIdException fenced = e instanceof FencedInstanceIdException
                        ? (FencedInstanceIdException) e
                        : e.getCause() instanceof FencedInstanceIdException ? (FencedInstanceIdException) e.getCause() : null;
                if (fenced == null) {
                    System.err.println("HerdlabMember: the client failed: " + e);
                    e.printStackTrace();
                    closeQuietly();
                    emit("stopped", field("clean", false));
                    return 1;
                }
                Object[] err = errorOf(fenced);
                emit("heartbeat_error", field("error", err[0]), field("code", err[1]));
                System.err.println("HerdlabMember: fenced: " + e);
                closeQuietly();
                emit("stopped", field("clean", false));
                return 1;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                closeQuietly();
                emit("stopped", field("clean", false));
                return 1;
            }
        }

        private void closeQuietly() {
            if (consumer == null) {
                return;
            }
            try {
                consumer.close(Duration.ZERO);
            } catch (RuntimeException e) {
                System.err.println("HerdlabMember: close: " + e);
            }
        }
    }

    // -- the process ----------------------------------------------------------------------------------

    /** slf4j-simple's settings unless the JVM's command line gives them: the client's own rebalance
     * messages at INFO, its configuration dumps and metrics at WARN, all on stderr. */
    private static void logging() {
        String[][] defaults = {
                {"org.slf4j.simpleLogger.logFile", "System.err"},
                {"org.slf4j.simpleLogger.defaultLogLevel", "info"},
                {"org.slf4j.simpleLogger.showDateTime", "true"},
                {"org.slf4j.simpleLogger.dateTimeFormat", "HH:mm:ss.SSS"},
                {"org.slf4j.simpleLogger.log.org.apache.kafka.common", "warn"},
                {"org.slf4j.simpleLogger.log.org.apache.kafka.clients.consumer.ConsumerConfig", "warn"},
                {"org.slf4j.simpleLogger.log.org.apache.kafka.clients.Metadata", "warn"},
        };
        for (String[] d : defaults) {
            if (System.getProperty(d[0]) == null) {
                System.setProperty(d[0], d[1]);
            }
        }
    }

    /** Read stdin's commands for ``members`` (a command with "m" is for that slot, else for every
     * member); at end of file halt the JVM at once. */
    private static void readCommands(List<Member> members) {
        HerdlabIo.readStdin(P, line -> {
            Matcher m = CMD.matcher(line);
            String cmd = m.find() ? m.group(1) : "";
            Matcher s = SLOT.matcher(line);
            List<Member> to = members;
            if (s.find()) {
                int slot = Integer.parseInt(s.group(1));
                to = slot < members.size() ? List.of(members.get(slot)) : List.of();
            }
            if ((cmd.equals("stall") || cmd.equals("unstall")) && !to.isEmpty()) {
                to.forEach(member -> member.stall(cmd.equals("stall")));
            } else {
                System.err.println(P + ": unknown command ignored: " + line);
            }
        });
    }

    public static void main(String[] args) throws Exception {
        // first, so that a stop during the start-up or the hold is this program's (no JVM default exit)
        sun.misc.SignalHandler onStop = sig -> {
            stopAsked = true;
            MEMBERS.forEach(Member::stop);
        };
        sun.misc.Signal.handle(new sun.misc.Signal("TERM"), onStop);
        sun.misc.Signal.handle(new sun.misc.Signal("INT"), onStop);
        logging();
        Set<String> known = ConsumerConfig.configNames();
        if (args.length == 1 && args[0].equals("--config-names")) {
            HerdlabIo.emit(HerdlabIo.json(new TreeSet<>(known)));
            return;
        }
        Map<String, String> opts = new TreeMap<>();
        Map<String, String> given = new java.util.LinkedHashMap<>();
        List<String[]> hosted = new ArrayList<>(); // --member NAME[=INSTANCE_ID]
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length) {
                fail("option " + a + " needs a value");
            }
            String v = args[++i];
            if (a.equals("-X")) {
                int eq = v.indexOf('=');
                if (eq <= 0) {
                    fail("-X expects NAME=VALUE, got " + v);
                }
                given.put(v.substring(0, eq).trim(), v.substring(eq + 1).trim());
            } else if (a.equals("--member")) {
                int eq = v.indexOf('=');
                hosted.add(eq < 0 ? new String[] {v, null} : new String[] {v.substring(0, eq), v.substring(eq + 1)});
            } else if (Set.of("--bootstrap", "--group", "--topic", "--name", "--group-instance-id",
                    "--hold-until", "--poll-ms").contains(a)) {
                opts.put(a, v);
            } else {
                fail("unknown option " + a);
            }
        }
        for (String o : List.of("--bootstrap", "--group", "--topic")) {
            if (!opts.containsKey(o)) {
                fail("missing " + o);
            }
        }
        if (hosted.isEmpty() == !opts.containsKey("--name")) {
            fail("give either --name (one member) or --member (repeated: members hosted in this JVM)");
        }
        if (!hosted.isEmpty() && opts.containsKey("--group-instance-id")) {
            fail("a hosted member's group.instance.id goes with its name: --member NAME=INSTANCE_ID");
        }
        if (hosted.isEmpty()) {
            hosted.add(new String[] {opts.get("--name"), opts.get("--group-instance-id")});
        }
        for (String name : given.keySet()) {
            if (!known.contains(name)) {
                fail("unknown java property '" + name + "'");
            }
        }
        List<Member> members = new ArrayList<>();
        for (int slot = 0; slot < hosted.size(); slot++) {
            String[] who = hosted.get(slot);
            Properties props = new Properties();
            given.forEach((k, v) -> {
                if (!POLICY.contains(k)) {
                    props.put(k, k.equals(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG) ? assignors(v) : v);
                }
            });
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, opts.get("--bootstrap"));
            props.put(ConsumerConfig.GROUP_ID_CONFIG, opts.get("--group"));
            props.put(ConsumerConfig.CLIENT_ID_CONFIG, who[0]); // one client.id per consumer: its MBeans
            if (who[1] != null) {
                props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, who[1]);
            }
            props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            try {
                new ConsumerConfig(props); // a bad value: one line now, not a trace after ready
                Policy policy = new Policy(Boolean.parseBoolean(given.getOrDefault("enable.auto.commit", "true")),
                        Long.parseLong(given.getOrDefault("auto.commit.interval.ms", "5000")));
                long pollMs = Long.parseLong(opts.getOrDefault("--poll-ms", "200"));
                members.add(new Member(hosted.size() > 1 || opts.get("--name") == null ? slot : null,
                        opts.get("--topic"), props, policy, pollMs));
            } catch (RuntimeException e) {
                fail("bad configuration: " + e.getMessage());
            }
        }
        MEMBERS.addAll(members);
        if (stopAsked) { // a stop before the members were made: theirs too
            members.forEach(Member::stop);
        }
        readCommands(members);
        if (opts.containsKey("--hold-until")
                && !HerdlabIo.hold(P, Paths.get(opts.get("--hold-until")), () -> stopAsked)) {
            HerdlabIo.OUT.flush();
            System.exit(0); // stopped while held: nothing printed, nothing joined
        }
        int[] status = new int[members.size()];
        java.util.Arrays.fill(status, 1); // a member thread that died of an uncaught error
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < members.size(); i++) {
            int slot = i;
            Thread t = new Thread(() -> status[slot] = members.get(slot).run(given), "herdlab-member-" + slot);
            threads.add(t);
            t.start();
        }
        int exit = 0;
        for (int i = 0; i < threads.size(); i++) {
            threads.get(i).join();
            exit = Math.max(exit, status[i]);
        }
        HerdlabIo.OUT.flush();
        System.exit(exit);
    }

    /** Kafka's assignor names (range, roundrobin, sticky, cooperative-sticky) as the client's classes;
     * a class name stays as it is. */
    static String assignors(String value) {
        List<String> out = new ArrayList<>();
        for (String a : value.split(",")) {
            String name = a.trim();
            if (!name.isEmpty()) {
                out.add(ASSIGNORS.getOrDefault(name, name));
            }
        }
        return String.join(",", out);
    }
}
