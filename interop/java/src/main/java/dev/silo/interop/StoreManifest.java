package dev.silo.interop;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * The manifest shared by {@link StoreTool} and the Rust store tests: one line per message in put
 * order, nine tab-separated fields:
 *
 * <pre>
 * topic  queueId  queueOffset  commitLogOffset  bodyHex  tags  keys  uniqKey  lmqList
 * </pre>
 *
 * <p>{@code bodyHex} is lowercase hex; {@code tags}, {@code keys} and {@code uniqKey} are the
 * property values as stored (may be empty); {@code lmqList} is the {@code INNER_MULTI_DISPATCH}
 * value ({@code %LMQ%a,%LMQ%b}) or {@code -} when the message has none. Readers skip empty lines
 * and lines starting with {@code #}; the writer emits neither.
 */
final class StoreManifest {
    static final String NO_LMQ = "-";
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private StoreManifest() {
    }

    static final class Entry {
        final String topic;
        final int queueId;
        final long queueOffset;
        final long commitLogOffset;
        final byte[] body;
        final String tags;
        final String keys;
        final String uniqKey;
        /** The raw INNER_MULTI_DISPATCH value, or null. */
        final String lmqList;
        /** 1-based line number in the manifest file (0 when built in memory). */
        final int line;

        Entry(String topic, int queueId, long queueOffset, long commitLogOffset, byte[] body, String tags,
            String keys, String uniqKey, String lmqList, int line) {
            this.topic = topic;
            this.queueId = queueId;
            this.queueOffset = queueOffset;
            this.commitLogOffset = commitLogOffset;
            this.body = body;
            this.tags = tags;
            this.keys = keys;
            this.uniqKey = uniqKey;
            this.lmqList = lmqList;
            this.line = line;
        }

        List<String> lmqs() {
            return lmqList == null ? Collections.emptyList() : Arrays.asList(lmqList.split(",", -1));
        }

        /** The individual KEYS entries (space separated, as the index service splits them). */
        List<String> keyList() {
            List<String> out = new ArrayList<>();
            for (String k : keys.split(" ")) {
                if (!k.isEmpty()) {
                    out.add(k);
                }
            }
            return out;
        }

        String queueKey() {
            return topic + "/" + queueId;
        }

        String where() {
            return "line " + line + " (" + abbreviate(topic) + "/" + queueId + "@" + queueOffset + ", clo "
                + commitLogOffset + ")";
        }

        String toLine() {
            String[] fields = {topic, Integer.toString(queueId), Long.toString(queueOffset),
                Long.toString(commitLogOffset), hex(body), tags, keys, uniqKey, lmqList == null ? NO_LMQ : lmqList};
            for (String f : fields) {
                if (f.indexOf('\t') >= 0 || f.indexOf('\n') >= 0 || f.indexOf('\r') >= 0) {
                    throw new IllegalArgumentException("manifest field contains a tab or newline: " + f);
                }
            }
            return String.join("\t", fields);
        }
    }

    static List<Entry> read(Path file) throws IOException {
        List<Entry> out = new ArrayList<>();
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.split("\t", -1);
            if (f.length != 9) {
                throw new IOException(file + ": line " + (i + 1) + ": expected 9 tab-separated fields, got " + f.length);
            }
            try {
                out.add(new Entry(f[0], Integer.parseInt(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3]), unhex(f[4]),
                    f[5], f[6], f[7], NO_LMQ.equals(f[8]) ? null : f[8], i + 1));
            } catch (IllegalArgumentException e) {
                throw new IOException(file + ": line " + (i + 1) + ": " + e.getMessage(), e);
            }
        }
        return out;
    }

    static void write(Path file, List<Entry> entries) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (Entry e : entries) {
            sb.append(e.toLine()).append('\n');
        }
        Path abs = file.toAbsolutePath();
        Files.createDirectories(abs.getParent());
        Path tmp = abs.resolveSibling(abs.getFileName() + ".tmp");
        Files.write(tmp, sb.toString().getBytes(StandardCharsets.UTF_8));
        Files.move(tmp, abs, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    static String hex(byte[] b) {
        return hex(b, 0, b.length);
    }

    static String hex(byte[] b, int from, int to) {
        char[] c = new char[(to - from) * 2];
        for (int i = from; i < to; i++) {
            c[(i - from) * 2] = HEX[(b[i] >> 4) & 0xf];
            c[(i - from) * 2 + 1] = HEX[b[i] & 0xf];
        }
        return new String(c);
    }

    static byte[] unhex(String s) {
        if (s.length() % 2 != 0) {
            throw new IllegalArgumentException("odd-length hex");
        }
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            int hi = Character.digit(s.charAt(2 * i), 16);
            int lo = Character.digit(s.charAt(2 * i + 1), 16);
            if (hi < 0 || lo < 0) {
                throw new IllegalArgumentException("bad hex digit in body");
            }
            b[i] = (byte) ((hi << 4) | lo);
        }
        return b;
    }

    /** Keeps the 200-character topic readable in messages. */
    static String abbreviate(String s) {
        if (s.length() <= 40) {
            return s;
        }
        return s.substring(0, 12) + "...(" + s.length() + " chars)";
    }
}
