import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import kafka.common.ConsumerRebalanceFailedException;
import kafka.consumer.ConsumerConfig;
import kafka.consumer.ConsumerIterator;
import kafka.consumer.KafkaStream;
import kafka.javaapi.consumer.ConsumerConnector;
import kafka.message.MessageAndMetadata;

import org.apache.log4j.AppenderSkeleton;
import org.apache.log4j.ConsoleAppender;
import org.apache.log4j.Level;
import org.apache.log4j.Logger;
import org.apache.log4j.PatternLayout;
import org.apache.log4j.spi.LoggingEvent;
import org.apache.log4j.spi.ThrowableInformation;

/**
 * herdlab's member on Kafka 0.8.2.2's own high-level consumer (kafka.consumer.ZookeeperConsumerConnector,
 * unmodified): one connector, one stream of one topic, printing what it does as the JSON lines of
 * harness/members/child.py (the legacy_zk kind: LegacySink).
 *
 * <p>Command line: {@code --bootstrap ZK --group G --topic T --name N [-X name=value]... [--hold-until FILE]}.
 * --bootstrap is the ZooKeeper connect string (the broker is found where 0.8 finds it: in ZooKeeper).
 * The -X properties are 0.8's consumer properties; herdlab's own (herdlab.*, and the mitigations
 * takeover.delay.ms and offsets.commit.fenced at their "off" values) are dropped, as the original has
 * none; a mitigation switched on, a missing option or a bad value is one line on stderr, exit status 2.
 * consumer.id, unless given, is made as 0.8.2.2 makes it (host-millis-uuid8), so that the member's id,
 * the connector's consumerIdString (group_consumer.id), is known before the connector exists.
 *
 * <p>Where each line comes from. 0.8.2.2 has no rebalance listener: the connector tells what it does only
 * in its log4j messages, logged synchronously on the thread doing the work, at the moment it does it. An
 * appender of ours on those loggers turns them into lines:
 * <ul>
 * <li>kafka.consumer.ZookeeperConsumerConnector: "end registering consumer X in ZK" (registered, with the
 * session's id and password read from the connector's ZooKeeper handle), "begin/end rebalancing consumer
 * X try #i" (rebalance_begin / rebalance_end, the outcome from the attempt's own messages: "selected
 * partitions" ok, "waiting for the partition ownership to be deleted" conflict, "no brokers found"
 * no_brokers, "exception during rebalance" error, none of them shutdown), "Releasing partition
 * ownership" then DEBUG "Consumer X releasing ZNODE" (release per owner znode deleted, then revoked;
 * after a claim or conflict in the same attempt the deletes are the conflict's roll-back:
 * release{rollback}), "T successfully owned partition P for topic T" (claim), "Consumer X selected
 * partitions" (assigned, just before the fetchers start), "ZK expired; ..." (revoked{session_expired}
 * before the re-registration), "Committing all offsets after clearing the fetcher queues" and TRACE
 * "auto committing" (which commit the next offset writes belong to);</li>
 * <li>kafka.utils.ZkUtils$: "conflict in PATH ... stored data: H" (the conflict's holder) and "PATH exists
 * with value ... during connection loss" (a claim recovered);</li>
 * <li>kafka.consumer.RangeAssignor / RoundRobinAssignor: the consumers the assignment saw;</li>
 * <li>org.I0Itec.zkclient.ZkClient: "zookeeper state changed (S)" (zk_state);</li>
 * <li>org.apache.zookeeper.ClientCnxn at DEBUG: "Reading reply ..." of a setData or create of
 * /consumers/G/offsets/T/P answered OK (commit: the offset ZooKeeper stored; 0.8.2.2 logs no commit),
 * and "Got WatchedEvent ..." (the watches a rebalance's reason names).</li>
 * </ul>
 * Records: one line per message the stream hands over. Nothing is written to ZooKeeper by this program.
 *
 * <p>Lines: ready (before the connector exists), started{topics,session_id,client,fetch,config},
 * registered{path,session_id,session_password}, rebalance_begin{rebalance,attempt,reason},
 * release{rebalance,attempt,topic,partition[,rollback]}, revoked{topic,partition,all,reason[,rebalance,
 * attempt]}, claim{rebalance,attempt,topic,partition,thread[,recovered]},
 * conflict{rebalance,attempt,topic,partition,holder}, assigned{topic,partition,all,rebalance,attempt,
 * threads,gained,lost,consumers}, rebalance_end{rebalance,attempt,outcome,duration_ms,gave_up,owned
 * [,detail]}, record{topic,partition,offset[,seq]}, commit{topic,partition,offset,reason,store},
 * zk_state{state,session_id}, stopped{stats}; every line carries "member".
 *
 * <p>Control: SIGTERM or SIGINT: connector.shutdown() (0.8.2.2 commits when auto commit is on, then
 * closes its session), revoked{shutdown}, stopped, exit 0; before the release of a hold it ends the
 * program at once, exit 0, having printed nothing. SIGUSR1 is ignored. stdin at end of file (the adapter is gone): halt at
 * once, no commit. SIGKILL and SIGSTOP act on the process. A first rebalance that gives up
 * (ConsumerRebalanceFailedException out of createMessageStreams) leaves the connector registered and
 * watching, as in 0.8.2.2; the member then consumes the streams the connector made.
 */
public final class HerdlabLegacyMember {
    static final String CLIENT = "kafka-0.8.2.2";
    private static final String P = "HerdlabLegacyMember";
    /** herdlab's own properties, dropped when at these values (the original has no such switch). */
    private static final Map<String, String> HERDLAB_ONLY = Map.of(
            "takeover.delay.ms", "0", "offsets.commit.fenced", "false");
    private static final Pattern SEQ = Pattern.compile("\"seq\"\\s*:\\s*(-?\\d+)");

    private static volatile boolean stopAsked;
    private static volatile Runnable onStop;

    private HerdlabLegacyMember() {
    }

    // -- output ---------------------------------------------------------------------------------------

    /** Print one line: {"kind":kind,"member":member, then ``fields`` in order}. */
    static void line(String kind, String member, Map<String, Object> fields) {
        StringBuilder b = new StringBuilder(96).append("{\"kind\":").append(HerdlabIo.str(kind));
        b.append(",\"member\":").append(HerdlabIo.str(member));
        for (Map.Entry<String, Object> f : fields.entrySet()) {
            b.append(',').append(HerdlabIo.str(f.getKey())).append(':').append(HerdlabIo.json(f.getValue()));
        }
        b.append('}');
        HerdlabIo.emit(b);
    }

    static Map<String, Object> fields(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    static void fail(String message) {
        HerdlabIo.fail(P, message);
    }

    /** The connector; a ZooKeeper that does not answer within zookeeper.connection.timeout.ms (zkclient's
     *  ZkTimeoutException out of the constructor) is one line on stderr and exit status 1, as for the Python
     *  member, not a stack trace. */
    static ConsumerConnector connect(ConsumerConfig config, String zookeeper) {
        try {
            return kafka.consumer.Consumer.createJavaConsumerConnector(config);
        } catch (org.I0Itec.zkclient.exception.ZkTimeoutException e) {
            System.err.println("HerdlabLegacyMember: ZooKeeper at " + zookeeper + " did not answer within "
                    + config.zkConnectionTimeoutMs() + " ms (zookeeper.connection.timeout.ms)");
            HerdlabIo.OUT.flush();
            System.exit(1);
            return null;
        }
    }

    // -- the connector's ZooKeeper handle (read only) -------------------------------------------------

    /** The connector's zkclient connection (whose ZooKeeper client a session expiry replaces), or null:
     * read by reflection (0.8.2.2 keeps it private), only to report the session's id and password. */
    static org.I0Itec.zkclient.ZkConnection zookeeper(ConsumerConnector connector) {
        try {
            Field underlying = connector.getClass().getDeclaredField("underlying");
            underlying.setAccessible(true);
            Object inner = underlying.get(connector);
            Method zk = inner.getClass().getMethod("kafka$consumer$ZookeeperConsumerConnector$$zkClient");
            Object zkClient = zk.invoke(inner);
            if (zkClient == null) {
                return null;
            }
            Field conn = org.I0Itec.zkclient.ZkClient.class.getDeclaredField("_connection");
            conn.setAccessible(true);
            Object connection = conn.get(zkClient);
            return connection instanceof org.I0Itec.zkclient.ZkConnection
                    ? (org.I0Itec.zkclient.ZkConnection) connection : null;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    /** The streams a connector made for ``topic`` whose createMessageStreams gave up (read by reflection
     * from its rebalance listener, where 0.8.2.2 keeps them). */
    @SuppressWarnings("unchecked")
    static List<KafkaStream<byte[], byte[]>> madeStreams(ConsumerConnector connector, String topic)
            throws ReflectiveOperationException {
        Field underlying = connector.getClass().getDeclaredField("underlying");
        underlying.setAccessible(true);
        Object inner = underlying.get(connector);
        Object listener = inner.getClass()
                .getMethod("kafka$consumer$ZookeeperConsumerConnector$$loadBalancerListener").invoke(inner);
        scala.collection.mutable.Map<String, scala.collection.immutable.List<?>> streams =
                (scala.collection.mutable.Map<String, scala.collection.immutable.List<?>>)
                        listener.getClass().getMethod("kafkaMessageAndMetadataStreams").invoke(listener);
        return (List<KafkaStream<byte[], byte[]>>) (List<?>) scala.collection.JavaConversions
                .seqAsJavaList(streams.apply(topic));
    }

    // -- what the connector logs, as lines -------------------------------------------------------------

    /** Turns the connector's, zkclient's and ZooKeeper's log messages into lines (see the class comment).
     * One per member; every method runs on the thread that logged, under this object's lock. */
    static final class Observer {
        private static final Pattern TRY = Pattern.compile("rebalancing consumer (\\S+) try #(\\d+)$");
        private static final Pattern OWNED =
                Pattern.compile("^(\\S+) successfully owned partition (\\d+) for topic (.+)$");
        private static final Pattern WAITING =
                Pattern.compile("^waiting for the partition ownership to be deleted: (\\d+)$");
        private static final Pattern RELEASING = Pattern.compile("^Consumer (\\S+) releasing (\\S+)$");
        private static final Pattern STATE = Pattern.compile("^zookeeper state changed \\((\\w+)\\)");
        private static final Pattern CONFLICT_IN = Pattern.compile("^conflict in (\\S+) data: .* stored data: (.*)$");
        private static final Pattern RECOVERED = Pattern.compile("^(\\S+) exists with value .* during connection loss");
        private static final Pattern REPLY = Pattern.compile(
                "header:: (-?\\d+),(\\d+)\\s+replyHeader:: -?\\d+,-?\\d+,(-?\\d+)\\s+request:: '([^,]*),#([0-9a-fA-F]*)");
        private static final Pattern WATCHED = Pattern.compile("^Got WatchedEvent state:\\w+ type:(\\w+) path:(\\S+)");
        private static final Pattern CONSUMERS = Pattern.compile("with consumers:? \\w*\\((.*)\\)\\s*$");
        private static final Set<Integer> WRITES = Set.of(1, 5); // create, setData

        final String member;
        final String group;
        final String topic;
        final int maxRetries;
        private final String ident;
        volatile org.I0Itec.zkclient.ZkConnection zookeeper; // the connector's, once it exists
        final Map<String, Long> stats = new LinkedHashMap<>();

        private int rebalance;
        private int attempt = -1;
        private long begunNs;
        private String outcome;
        private String detail;
        private boolean claiming; // a claim or conflict was seen in this attempt: deletes are roll-backs
        private final TreeMap<Integer, String> owned = new TreeMap<>(); // partition -> consumer thread
        private final TreeMap<Integer, String> claimed = new TreeMap<>();
        private final TreeSet<Integer> ownedBefore = new TreeSet<>();
        private final TreeSet<Integer> releasing = new TreeSet<>();
        private final List<Integer> released = new ArrayList<>();
        private final Set<String> reasons = new LinkedHashSet<>(); // since the last synced rebalance began
        private String reason = "start";
        private String holder;
        private boolean recovered;
        private Integer consumers;
        private String commitReason = "auto";

        Observer(String member, String group, String topic, int maxRetries) {
            this.member = member;
            this.group = group;
            this.topic = topic;
            this.maxRetries = maxRetries;
            this.ident = "[" + member + "], ";
            reasons.add("start");
            // herdlab's member's counters that the original's messages give (not zk_retries: zkclient's
            // retryUntilConnected logs nothing; commits_rejected: a ZooKeeper offset write is never refused)
            for (String k : List.of("rebalances", "attempts", "failed_attempts", "claims", "conflicts",
                    "releases", "records", "commits", "commits_rejected", "gave_up", "session_expiries",
                    "watches")) {
                stats.put(k, 0L);
            }
        }

        private void emit(String kind, Map<String, Object> f) {
            line(kind, member, f);
        }

        private void count(String stat) {
            stats.merge(stat, 1L, Long::sum);
        }

        /** The current session's ZooKeeper client (a new one after an expiry), or null. */
        private org.apache.zookeeper.ZooKeeper client() {
            org.I0Itec.zkclient.ZkConnection c = zookeeper;
            return c == null ? null : c.getZookeeper();
        }

        Long sessionId() {
            org.apache.zookeeper.ZooKeeper zk = client();
            return zk == null ? null : zk.getSessionId();
        }

        String sessionPassword() {
            org.apache.zookeeper.ZooKeeper zk = client();
            if (zk == null) {
                return null;
            }
            StringBuilder b = new StringBuilder();
            for (byte x : zk.getSessionPasswd()) {
                b.append(String.format("%02x", x & 0xff));
            }
            return b.toString();
        }

        private static List<List<Object>> tps(String topic, Collection<Integer> partitions) {
            List<List<Object>> out = new ArrayList<>();
            for (int p : new TreeSet<>(partitions)) {
                out.add(List.of(topic, p));
            }
            return out;
        }

        /** One log message (``logger`` its logger's name). */
        synchronized void observe(String logger, Level level, String message, Throwable thrown) {
            if (message == null) {
                return;
            }
            switch (logger) {
                case "kafka.consumer.ZookeeperConsumerConnector":
                    connector(message.startsWith(ident) ? message.substring(ident.length()) : message, thrown);
                    break;
                case "kafka.utils.ZkUtils$":
                    zkUtils(message);
                    break;
                case "kafka.consumer.RangeAssignor":
                case "kafka.consumer.RoundRobinAssignor":
                    assignor(message);
                    break;
                case "org.I0Itec.zkclient.ZkClient":
                    Matcher s = STATE.matcher(message);
                    if (s.find() && zookeeper != null) { // from started on, as the Python member's listener
                        emit("zk_state", fields("state", state(s.group(1)), "session_id", sessionId()));
                    }
                    break;
                case "org.apache.zookeeper.ClientCnxn":
                    if (message.startsWith("Reading reply ")) {
                        reply(message);
                    } else if (message.startsWith("Got WatchedEvent ")) {
                        Matcher w = WATCHED.matcher(message);
                        if (w.find() && !w.group(1).equals("None")) {
                            count("watches");
                            reasons.add("watch:" + w.group(2));
                        }
                    }
                    break;
                default:
                    break;
            }
        }

        /** kazoo's names of the states the Python member reports (CONNECTED, SUSPENDED, LOST). */
        static String state(String keeperState) {
            switch (keeperState) {
                case "SyncConnected": return "CONNECTED";
                case "Disconnected": return "SUSPENDED";
                case "Expired": return "LOST";
                default: return keeperState.toUpperCase(java.util.Locale.ROOT);
            }
        }

        private void connector(String m, Throwable thrown) {
            Matcher t;
            if (m.startsWith("end registering consumer ")) {
                emit("registered", fields("path", "/consumers/" + group + "/ids/" + member,
                        "session_id", sessionId(), "session_password", sessionPassword()));
            } else if (m.startsWith("begin rebalancing consumer ") && (t = TRY.matcher(m)).find()) {
                attempt = Integer.parseInt(t.group(2));
                if (attempt == 0) {
                    rebalance++;
                    count("rebalances");
                }
                count("attempts");
                begunNs = System.nanoTime();
                outcome = "shutdown";
                detail = null;
                claiming = false;
                claimed.clear();
                consumers = null;
                ownedBefore.clear();
                ownedBefore.addAll(owned.keySet());
                if (attempt == 0) { // a retry carries its synced rebalance's reasons, as the Python member's
                    reason = reasons.isEmpty() ? "watch" : String.join(",", reasons);
                    reasons.clear();
                }
                emit("rebalance_begin", fields("rebalance", rebalance, "attempt", attempt, "reason", reason));
            } else if (m.startsWith("end rebalancing consumer ") && TRY.matcher(m).find()) {
                flushRevoked();
                boolean failed = outcome.equals("conflict") || outcome.equals("error");
                if (failed) {
                    count("failed_attempts");
                }
                boolean gaveUp = failed && attempt == maxRetries - 1;
                if (gaveUp) {
                    count("gave_up");
                }
                Map<String, Object> f = fields("rebalance", rebalance, "attempt", attempt, "outcome", outcome,
                        "duration_ms", Math.round((System.nanoTime() - begunNs) / 1000.0) / 1000.0,
                        "gave_up", gaveUp, "owned", tps(topic, owned.keySet()));
                if (detail != null) {
                    f.put("detail", detail);
                }
                emit("rebalance_end", f);
            } else if (m.equals("Releasing partition ownership")) {
                releasing.clear();
                releasing.addAll(owned.keySet());
                released.clear();
            } else if ((t = RELEASING.matcher(m)).find()) {
                int p = partitionOf(t.group(2));
                if (p < 0) {
                    return;
                }
                count("releases");
                if (claiming) {
                    emit("release", fields("rebalance", rebalance, "attempt", attempt, "topic", topic,
                            "partition", p, "rollback", true));
                } else {
                    emit("release", fields("rebalance", rebalance, "attempt", attempt, "topic", topic,
                            "partition", p));
                    owned.remove(p);
                    released.add(p);
                    releasing.remove(p);
                    if (releasing.isEmpty()) {
                        flushRevoked();
                    }
                }
            } else if ((t = OWNED.matcher(m)).find()) {
                flushRevoked();
                claiming = true;
                int p = Integer.parseInt(t.group(2));
                claimed.put(p, t.group(1));
                count("claims");
                Map<String, Object> f = fields("rebalance", rebalance, "attempt", attempt, "topic", t.group(3),
                        "partition", p, "thread", t.group(1));
                if (recovered) {
                    f.put("recovered", true);
                }
                recovered = false;
                emit("claim", f);
            } else if ((t = WAITING.matcher(m)).find()) {
                flushRevoked();
                claiming = true;
                outcome = "conflict";
                count("conflicts");
                emit("conflict", fields("rebalance", rebalance, "attempt", attempt, "topic", topic,
                        "partition", Integer.parseInt(t.group(1)), "holder", holder));
                holder = null;
            } else if (m.startsWith("Consumer ") && m.contains(" selected partitions : ")) {
                outcome = "ok";
                owned.clear();
                owned.putAll(claimed);
                Set<Integer> gained = new TreeSet<>(claimed.keySet());
                gained.removeAll(ownedBefore);
                Set<Integer> lost = new TreeSet<>(ownedBefore);
                lost.removeAll(claimed.keySet());
                Map<String, String> threads = new LinkedHashMap<>();
                claimed.forEach((p, tid) -> threads.put("[" + topic + "," + p + "]", tid));
                List<List<Object>> all = tps(topic, claimed.keySet());
                for (int p : claimed.keySet()) {
                    emit("assigned", fields("topic", topic, "partition", p, "all", all, "rebalance", rebalance,
                            "attempt", attempt, "threads", threads, "gained", tps(topic, gained),
                            "lost", tps(topic, lost), "consumers", consumers));
                }
            } else if (m.startsWith("no brokers found when trying to rebalance")) {
                outcome = "no_brokers";
            } else if (m.startsWith("exception during rebalance")) {
                outcome = "error";
                detail = thrown == null ? m.trim() : thrown.getClass().getSimpleName() + ": " + thrown.getMessage();
            } else if (m.startsWith("ZK expired; ")) {
                count("session_expiries");
                revokeAll("session_expired");
                reasons.clear();
                reasons.add("new_session");
            } else if (m.startsWith("Committing all offsets after clearing the fetcher queues")) {
                commitReason = "rebalance";
            } else if (m.equals("auto committing")) {
                commitReason = "auto";
            }
        }

        /** The partitions released by this attempt so far, as revoked (once, after their release lines). */
        private void flushRevoked() {
            if (released.isEmpty()) {
                return;
            }
            List<List<Object>> all = tps(topic, released);
            for (int p : new TreeSet<>(released)) {
                emit("revoked", fields("topic", topic, "partition", p, "all", all, "rebalance", rebalance,
                        "attempt", attempt, "reason", "rebalance"));
            }
            released.clear();
            releasing.clear();
        }

        /** Every owned partition revoked for ``reason`` (no rebalance: a session expiry, a shutdown). */
        synchronized void revokeAll(String reason) {
            List<List<Object>> all = tps(topic, owned.keySet());
            for (int p : owned.keySet()) {
                emit("revoked", fields("topic", topic, "partition", p, "all", all, "reason", reason));
            }
            owned.clear();
        }

        private void zkUtils(String m) {
            Matcher c = CONFLICT_IN.matcher(m);
            if (c.find()) {
                holder = c.group(2).equals("null") ? null : c.group(2);
                return;
            }
            if (RECOVERED.matcher(m).find()) {
                recovered = true;
            }
        }

        private void assignor(String m) {
            Matcher c = CONSUMERS.matcher(m);
            if (!c.find()) {
                return;
            }
            Set<String> ids = new TreeSet<>();
            for (String id : c.group(1).split(",")) {
                String s = id.trim();
                if (!s.isEmpty()) {
                    ids.add(s.replaceFirst("-\\d+$", "")); // a range consumer thread: consumer id-N
                }
            }
            consumers = ids.size();
        }

        /** A ZooKeeper reply: a create or setData of one of this group's offset znodes answered OK is a
         * commit of the offset it wrote. */
        private void reply(String m) {
            Matcher r = REPLY.matcher(m);
            if (!r.find() || !WRITES.contains(Integer.parseInt(r.group(2))) || Integer.parseInt(r.group(3)) != 0) {
                return;
            }
            String path = r.group(4);
            String prefix = "/consumers/" + group + "/offsets/";
            if (!path.startsWith(prefix)) {
                return;
            }
            String[] tp = path.substring(prefix.length()).split("/");
            if (tp.length != 2) {
                return;
            }
            long offset;
            try {
                offset = Long.parseLong(new String(hex(r.group(5)), StandardCharsets.UTF_8).trim());
            } catch (NumberFormatException e) {
                return;
            }
            count("commits");
            emit("commit", fields("topic", tp[0], "partition", Integer.parseInt(tp[1]), "offset", offset,
                    "reason", commitReason, "store", "zookeeper"));
        }

        synchronized void committing(String reason) {
            commitReason = reason;
        }

        synchronized void record(String topic, int partition, long offset, byte[] value) {
            count("records");
            Map<String, Object> f = fields("topic", topic, "partition", partition, "offset", offset);
            if (value != null && value.length > 0 && value[0] == '{') {
                Matcher s = SEQ.matcher(new String(value, StandardCharsets.UTF_8));
                if (s.find()) {
                    f.put("seq", Long.parseLong(s.group(1)));
                }
            }
            emit("record", f);
        }

        synchronized void stopped() {
            emit("stopped", fields("stats", new LinkedHashMap<>(stats)));
        }

        private int partitionOf(String znode) {
            String prefix = "/consumers/" + group + "/owners/" + topic + "/";
            if (!znode.startsWith(prefix)) {
                return -1;
            }
            try {
                return Integer.parseInt(znode.substring(prefix.length()));
            } catch (NumberFormatException e) {
                return -1;
            }
        }

        private static byte[] hex(String s) {
            byte[] out = new byte[s.length() / 2];
            for (int i = 0; i < out.length; i++) {
                out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
            }
            return out;
        }
    }

    /** The log4j appender that hands every message of the observed loggers to the observer. */
    static final class Tap extends AppenderSkeleton {
        private final Observer observer;

        Tap(Observer observer) {
            this.observer = observer;
        }

        @Override
        protected void append(LoggingEvent event) {
            ThrowableInformation ti = event.getThrowableInformation();
            Object msg = event.getMessage();
            observer.observe(event.getLoggerName(), event.getLevel(), msg == null ? null : msg.toString(),
                    ti == null ? null : ti.getThrowable());
        }

        @Override
        public void close() {
        }

        @Override
        public boolean requiresLayout() {
            return false;
        }
    }

    /** log4j 1.2: WARN and above on stderr (the member's log), INFO and above of the observed loggers. */
    static void logging() {
        Logger root = Logger.getRootLogger();
        root.removeAllAppenders();
        ConsoleAppender console = new ConsoleAppender(
                new PatternLayout("%d{HH:mm:ss.SSS} %-5p %c{1} %m%n"), ConsoleAppender.SYSTEM_ERR);
        console.setThreshold(Level.INFO);
        root.addAppender(console);
        root.setLevel(Level.WARN);
    }

    /** The observed loggers at the levels their messages need, into the tap. */
    static void observe(Observer observer) {
        Tap tap = new Tap(observer);
        Object[][] observed = {
                {"kafka.consumer.ZookeeperConsumerConnector", Level.TRACE},
                {"kafka.utils.ZkUtils$", Level.INFO},
                {"kafka.consumer.RangeAssignor", Level.INFO},
                {"kafka.consumer.RoundRobinAssignor", Level.INFO},
                {"org.I0Itec.zkclient.ZkClient", Level.INFO},
                {"org.apache.zookeeper.ClientCnxn", Level.DEBUG},
        };
        for (Object[] o : observed) {
            Logger l = Logger.getLogger((String) o[0]);
            l.setLevel((Level) o[1]);
            l.addAppender(tap);
        }
    }

    // -- the process ----------------------------------------------------------------------------------

    /** 0.8.2.2's own consumer id (host-millis-uuid8), as its connector makes one when none is given. */
    static String consumerId() {
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException e) {
            host = "localhost";
        }
        return host + "-" + System.currentTimeMillis() + "-"
                + Long.toHexString(UUID.randomUUID().getMostSignificantBits()).substring(0, 8);
    }

    public static void main(String[] args) throws Exception {
        sun.misc.SignalHandler stop = sig -> {
            stopAsked = true;
            Runnable r = onStop;
            if (r != null) {
                r.run();
            }
        };
        sun.misc.Signal.handle(new sun.misc.Signal("TERM"), stop);
        sun.misc.Signal.handle(new sun.misc.Signal("INT"), stop);
        // the legacy hosts' quiesce (SIGUSR1, to a process group): the original has no such step
        sun.misc.Signal.handle(new sun.misc.Signal("USR1"), sun.misc.SignalHandler.SIG_IGN);
        logging();
        Map<String, String> opts = new HashMap<>();
        Map<String, String> given = new LinkedHashMap<>();
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
            } else if (Set.of("--bootstrap", "--group", "--topic", "--name", "--hold-until").contains(a)) {
                opts.put(a, v);
            } else {
                fail("unknown option " + a);
            }
        }
        for (String o : List.of("--bootstrap", "--group", "--topic", "--name")) {
            if (!opts.containsKey(o)) {
                fail("missing " + o);
            }
        }
        Properties props = new Properties();
        for (Map.Entry<String, String> e : given.entrySet()) {
            String k = e.getKey();
            if (k.startsWith("herdlab.")) {
                continue;
            }
            if (HERDLAB_ONLY.containsKey(k)) {
                if (!HERDLAB_ONLY.get(k).equalsIgnoreCase(e.getValue())) {
                    fail(k + "=" + e.getValue() + " is a herdlab mitigation: Kafka 0.8.2.2 has none");
                }
                continue;
            }
            if (k.equals("offsets.storage") && !e.getValue().equalsIgnoreCase("zookeeper")) {
                fail("offsets.storage=" + e.getValue() + ": this member commits to ZooKeeper only");
            }
            props.put(k, e.getValue());
        }
        String group = opts.get("--group");
        String topic = opts.get("--topic");
        props.put("zookeeper.connect", opts.get("--bootstrap"));
        props.put("group.id", group);
        props.putIfAbsent("consumer.id", consumerId());
        props.putIfAbsent("client.id", opts.get("--name"));
        ConsumerConfig config = null;
        try {
            config = new ConsumerConfig(props);
        } catch (RuntimeException e) {
            fail("bad configuration: " + e.getMessage());
        }
        String member = group + "_" + props.getProperty("consumer.id");
        Observer observer = new Observer(member, group, topic, config.rebalanceMaxRetries());
        observe(observer);
        HerdlabIo.readStdin(P, line -> System.err.println(P + ": unknown command ignored: " + line));
        if (opts.containsKey("--hold-until")
                && !HerdlabIo.hold(P, Paths.get(opts.get("--hold-until")), () -> stopAsked)) {
            HerdlabIo.OUT.flush();
            System.exit(0);
        }
        if (stopAsked) {
            System.exit(0);
        }
        line("ready", member, fields());
        ConsumerConnector connector = connect(config, opts.get("--bootstrap"));
        observer.zookeeper = zookeeper(connector);
        Map<String, Object> cfg = new TreeMap<>();
        props.forEach((k, v) -> cfg.put((String) k, v));
        line("started", member, fields("topics", Map.of(topic, 1), "session_id", observer.sessionId(),
                "client", CLIENT, "fetch", true, "config", cfg));
        Thread stopper = new Thread(() -> {
            observer.committing("shutdown");
            connector.shutdown(); // 0.8.2.2: fetchers stopped, offsets committed (auto commit), session closed
        }, "herdlab-stop");
        onStop = () -> {
            synchronized (HerdlabLegacyMember.class) {
                if (stopper.getState() == Thread.State.NEW) {
                    stopper.start();
                }
            }
        };
        if (stopAsked) {
            onStop.run();
        }
        List<KafkaStream<byte[], byte[]>> streams;
        try {
            streams = connector.createMessageStreams(Collections.singletonMap(topic, 1)).get(topic);
        } catch (ConsumerRebalanceFailedException e) {
            System.err.println("HerdlabLegacyMember: " + e.getMessage() + "; registered, owning nothing until the next change");
            streams = madeStreams(connector, topic);
        }
        ConsumerIterator<byte[], byte[]> it = streams.get(0).iterator();
        try {
            while (it.hasNext()) { // ends when shutdown() puts its shutdown command into the queue
                MessageAndMetadata<byte[], byte[]> m = it.next();
                observer.record(m.topic(), m.partition(), m.offset(), m.message());
            }
        } catch (RuntimeException e) {
            if (!stopAsked) {
                throw e;
            }
        }
        onStop.run();
        stopper.join();
        observer.revokeAll("shutdown");
        observer.stopped();
        HerdlabIo.OUT.flush();
        System.exit(0);
    }
}
