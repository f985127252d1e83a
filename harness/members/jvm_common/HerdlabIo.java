import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * What herdlab's two JVM member programs (HerdlabMember, HerdlabLegacyMember) share, compiled beside each of
 * them (it uses no library): their JSON lines on stdout, the one-line failure, the wait for the runner's
 * release file and the reader of stdin. Messages on stderr start with the program's name.
 */
final class HerdlabIo {
    /** stdout, UTF-8; a line goes out whole and at once (emit). */
    static final PrintStream OUT =
            new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);

    private HerdlabIo() {
    }

    /** Print one line on stdout and flush it, never interleaved with another thread's. */
    static void emit(CharSequence line) {
        synchronized (OUT) {
            OUT.println(line);
            OUT.flush();
        }
    }

    /** A JSON string. */
    static String str(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"').toString();
    }

    /** JSON of null, booleans, integers, finite floating numbers (others: null), a class (its name),
     * collections (lists) and maps (objects, keys as text); anything else as its text. */
    static String json(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Boolean || v instanceof Integer || v instanceof Long || v instanceof Short) {
            return v.toString();
        }
        if (v instanceof Double || v instanceof Float) {
            return Double.isFinite(((Number) v).doubleValue()) ? v.toString() : "null";
        }
        if (v instanceof Class) {
            return str(((Class<?>) v).getName());
        }
        if (v instanceof Collection) {
            StringBuilder b = new StringBuilder("[");
            for (Object o : (Collection<?>) v) {
                if (b.length() > 1) {
                    b.append(',');
                }
                b.append(json(o));
            }
            return b.append(']').toString();
        }
        if (v instanceof Map) {
            StringBuilder b = new StringBuilder("{");
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (b.length() > 1) {
                    b.append(',');
                }
                b.append(str(String.valueOf(e.getKey()))).append(':').append(json(e.getValue()));
            }
            return b.append('}').toString();
        }
        return str(v.toString());
    }

    /** A user error: one line on stderr, exit status 2. */
    static void fail(String program, String message) {
        System.err.println(program + ": " + message);
        System.exit(2);
    }

    /** Wait until ``path`` exists, then remove it and return true (harness/members/release.py: the runner's
     * release); false, at once, when ``stopAsked`` turns true first (the file is left as it is). */
    static boolean hold(String program, Path path, BooleanSupplier stopAsked) throws InterruptedException {
        System.err.println("held until " + path + " exists");
        while (!Files.exists(path)) {
            if (stopAsked.getAsBoolean()) {
                System.err.println(program + ": stopped while held");
                return false;
            }
            Thread.sleep(10);
        }
        try {
            Files.deleteIfExists(path);
        } catch (java.io.IOException e) {
            System.err.println(program + ": release file: " + e);
        }
        return true;
    }

    /** On a daemon thread, give every non-blank line of stdin to ``command``; at end of file (the runner
     * gone) halt the JVM at once, stdout flushed. */
    static void readStdin(String program, Consumer<String> command) {
        Thread t = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (!line.isBlank()) {
                        command.accept(line);
                    }
                }
            } catch (java.io.IOException e) {
                System.err.println(program + ": stdin: " + e);
            }
            OUT.flush();
            Runtime.getRuntime().halt(0);
        }, "herdlab-stdin");
        t.setDaemon(true);
        t.start();
    }
}
